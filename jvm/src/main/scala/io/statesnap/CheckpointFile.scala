package io.statesnap

import scala.util.control.NonFatal

import io.statesnap.ScalaCompat._

/**
 * Every file of a checkpoint that statesnap reads and did not write byte by byte itself (Spark's offset and commit
 * logs, schema files and operator metadata; statesnap's own record files) is input: whatever is wrong with it, a
 * reader fails with one error, `STATESNAP_UNREADABLE_CHECKPOINT_FILE`, naming the file and what is wrong, never
 * with the parser's own exception.
 */
object CheckpointFile {
  /**
   * `parse` of the file at `path`, which holds `what` (as the error names it: "Spark's commit log entry").
   * @throws StatesnapException if reading or parsing it fails (a StatesnapException `parse` raises passes as is)
   */
  def read[T](path: Any, what: String)(parse: => T): T =
    try parse catch {
      case e: StatesnapException => throw e
      case NonFatal(e) => throw unreadable(path, what, Option(e.getMessage).getOrElse(e.getClass.getSimpleName), e)
    }

  /**
   * The error for the file at `path`, holding `what`, and `why` it cannot be read. Its fix never advises to start
   * from a new checkpoint: that discards the state, which one unreadable file does not make unreadable.
   */
  def unreadable(path: Any, what: String, why: String, cause: Throwable = null): StatesnapException =
    new StatesnapException(StatesnapException.UnreadableCheckpointFile, s"$what $path cannot be read: " +
      s"${why.linesIterator.nextOption().getOrElse("")}. Nothing was read or rewritten, and the state itself is " +
      "untouched. " + (if (relative(path)) "The path is relative, so it resolves against the working directory of " +
      "whatever reads it: a tool run on a relative checkpoint path wrote it (statesnap's tools write absolute paths " +
      "now). Restart the query from the directory that tool ran in, or restore the file that names this " +
      "path from the checkpoint's backup." else "The file is not what Spark or statesnap writes there (a partial " +
      "copy, another tool's edit, a corrupt storage): restore it from the checkpoint's backup or its source."), cause)

  /** What is wrong inside a file being read by [[read]], which names the file around it. */
  def malformed(why: String): IllegalArgumentException = new IllegalArgumentException(why)

  /** Whether `path` names a file relative to a working directory: neither a scheme nor a leading `/`. */
  private def relative(path: Any): Boolean = {
    val text = path.toString
    !text.startsWith("/") && !text.matches("[A-Za-z][A-Za-z0-9+.-]*:.*")
  }
}
