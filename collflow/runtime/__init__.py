"""Session and executor."""
from .session import Session, InteractiveSession, get_default_session  # noqa: F401
from .executor import CancellationToken  # noqa: F401
