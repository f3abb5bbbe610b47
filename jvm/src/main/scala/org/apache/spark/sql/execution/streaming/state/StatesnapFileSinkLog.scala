package org.apache.spark.sql.execution.streaming.state

import io.statesnap.SparkClasses
import io.statesnap.SparkClasses.FileStreamSinkLog
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.internal.SQLConf

/** Spark's log of a file sink, opened as the query that writes it opens it. */
object StatesnapFileSinkLog {
  /** The setting Spark's file sink log takes its default compact interval from, in the session that opens it. */
  val CompactIntervalConf: String = SQLConf.FILE_SINK_LOG_COMPACT_INTERVAL.key
  /** Its value in a session that does not set it. */
  val DefaultCompactInterval: String = SQLConf.FILE_SINK_LOG_COMPACT_INTERVAL.defaultValueString

  /**
   * Spark's log at `logDir`, with the default compact interval of the query's session where it is known: a log whose
   * compactions do not yet say the interval takes it from the session, and a tool's session (its own process) would
   * write a compaction batch as a plain one, or the reverse, which fails the query at its next compaction. Opened in a
   * clone of `spark`'s session, which keeps its other settings (the file system's among them) and leaves it as it was.
   */
  def open(spark: SparkSession, logDir: String, compactInterval: Option[Int]): FileStreamSinkLog = {
    val session = compactInterval.fold(spark) { interval =>
      // private[sql]: Spark offers no other way to a session with every setting of this one but one.
      val clone = spark.asInstanceOf[SparkClasses.SparkSession].cloneSession()
      clone.conf.set(CompactIntervalConf, interval.toString)
      clone
    }
    new FileStreamSinkLog(FileStreamSinkLog.VERSION, session, logDir, None)
  }
}
