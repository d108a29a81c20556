"""TensorBoard's embedding projector config (`tf.contrib.tensorboard.plugins.projector` in TF
1.x, as the word2vec tutorial uses it):

    config = projector.ProjectorConfig()
    embedding = config.embeddings.add()
    embedding.tensor_name = embeddings.name          # a variable the Saver checkpoints
    embedding.metadata_path = "metadata.tsv"         # one label per row
    projector.visualize_embeddings(writer, config)   # logdir/projector_config.pbtxt

TensorBoard's projector reads that file (protobuf text format) next to the checkpoints.
"""
from __future__ import annotations

import os
from typing import Any

from ..platform.atomic_files import atomic_write_bytes
from .proto import Message, text_format

__all__ = ["SpriteMetadata", "EmbeddingInfo", "ProjectorConfig", "visualize_embeddings", "PROJECTOR_FILENAME"]

PROJECTOR_FILENAME = "projector_config.pbtxt"


# TensorBoard's projector_config.proto (uint32 fields are varints, as int64's)
class SpriteMetadata(Message):
    """A sprite image of thumbnails, one per embedding row, each single_image_dim [w, h]."""
    FIELDS = ((1, "image_path", "string", ""), (2, "single_image_dim", ["int64"], None))


class EmbeddingInfo(Message):
    """One embedding: the checkpointed tensor (or a TSV tensor_path), its row labels, sprite."""
    FIELDS = ((1, "tensor_name", "string", ""), (2, "metadata_path", "string", ""),
              (3, "bookmarks_path", "string", ""), (4, "tensor_shape", ["int64"], None),
              (5, "sprite", SpriteMetadata, None), (6, "tensor_path", "string", ""))


class ProjectorConfig(Message):
    """The projector's config: the embeddings to show and where their checkpoint is."""
    FIELDS = ((1, "model_checkpoint_path", "string", ""), (2, "embeddings", [EmbeddingInfo], None),
              (3, "model_checkpoint_dir", "string", ""))


def visualize_embeddings(summary_writer: Any, config: ProjectorConfig) -> str:
    """Writes `config` as logdir/projector_config.pbtxt (whole or not at all); `summary_writer`
    is a FileWriter (its logdir) or, as TensorBoard 2's, the logdir itself.  Returns the path."""
    logdir = summary_writer if isinstance(summary_writer, (str, os.PathLike)) else summary_writer.get_logdir()
    if logdir is None:
        raise ValueError("Summary writer must have a logdir")
    if not isinstance(config, ProjectorConfig):
        raise TypeError(f"config must be a projector.ProjectorConfig, got {type(config).__name__}")
    os.makedirs(logdir, exist_ok=True)
    path = os.path.join(os.fspath(logdir), PROJECTOR_FILENAME)
    atomic_write_bytes(path, text_format(config).encode("utf-8"), durable=False)
    return path
