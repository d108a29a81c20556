"""Optimizers, learning-rate schedules and training utilities."""
