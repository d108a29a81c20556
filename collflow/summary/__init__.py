"""TensorBoard summaries (TensorFlow 1.x's `tf.summary`).

    tf.summary.scalar("loss", loss); tf.summary.histogram("w", w)
    merged = tf.summary.merge_all()
    writer = tf.summary.FileWriter("logs", sess.graph)
    writer.add_summary(sess.run(merged), step)

Summary ops (summary_ops.py) return serialized `Summary` protocol buffers; FileWriter
(writer.py) writes them into TensorBoard event files: TFRecords (platform/tfrecord.py) of `Event`
messages (proto.py), all encoded by collflow itself.  This package sits above the runtime
and below train (whose hooks write summaries).
"""
from .summary_ops import scalar, histogram, image, audio, text, merge, merge_all  # noqa: F401
from .writer import FileWriter, FileWriterCache, summary_iterator  # noqa: F401
from .proto import Summary, SummaryMetadata, SessionLog, Event, HistogramProto  # noqa: F401

__all__ = ["scalar", "histogram", "image", "audio", "text", "merge", "merge_all", "FileWriter", "FileWriterCache",
           "summary_iterator", "Summary", "SummaryMetadata", "SessionLog", "Event", "HistogramProto"]
