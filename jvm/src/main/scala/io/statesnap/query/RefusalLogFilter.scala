package io.statesnap.query

import java.util.concurrent.atomic.AtomicBoolean

import scala.util.control.NonFatal

import io.statesnap.StatesnapException
import org.apache.logging.log4j.{Level, LogManager, Marker}
import org.apache.logging.log4j.core.{Filter, LogEvent, Logger, LoggerContext}
import org.apache.logging.log4j.core.filter.AbstractFilter
import org.apache.logging.log4j.message.Message

/**
 * Keeps Spark's own logging of a statesnap refusal out of the driver's output: the refusal is the query's exception,
 * and the listener says it once at ERROR as the query terminates ([[StatesnapQueryListener]]); Spark's layers log the
 * same exception again with their stack traces (the stream execution's "terminated with error", a task's failure),
 * which buried it under some 200 lines. Only events of another logger than statesnap's whose throwable carries a
 * statesnap refusal are dropped: every other error, and every line of statesnap's, passes as before.
 */
private[query] final class RefusalLogFilter extends AbstractFilter(Filter.Result.DENY, Filter.Result.NEUTRAL) {
  // A filter of the whole configuration is asked before an event is made, with what the logger was given.
  override def filter(logger: Logger, level: Level, marker: Marker, msg: AnyRef, t: Throwable): Filter.Result =
    decide(logger.getName, t)
  override def filter(logger: Logger, level: Level, marker: Marker, msg: Message, t: Throwable): Filter.Result =
    decide(logger.getName, t)
  override def filter(event: LogEvent): Filter.Result = decide(event.getLoggerName, event.getThrown)

  private def decide(loggerName: String, thrown: Throwable): Filter.Result =
    if (!String.valueOf(loggerName).startsWith("io.statesnap") && carriesRefusal(thrown)) onMatch else onMismatch

  private def carriesRefusal(thrown: Throwable): Boolean =
    Iterator.iterate(thrown)(_.getCause).takeWhile(_ != null).take(20).exists(_.isInstanceOf[StatesnapException])
}

private[query] object RefusalLogFilter {
  private val installed = new AtomicBoolean(false)

  /** Adds the filter to the driver's logging configuration, once per JVM; logging it cannot reach is left as is. */
  def install(): Unit = if (installed.compareAndSet(false, true)) try {
    // The context Spark's own classes log to (statesnap's jar may sit in a class loader of its own).
    LogManager.getContext(classOf[org.apache.spark.SparkContext].getClassLoader, false) match {
      case context: LoggerContext =>
        val filter = new RefusalLogFilter
        filter.start()
        context.getConfiguration.addFilter(filter)
        context.updateLoggers()
      case _ =>
    }
  } catch {
    case NonFatal(_) => // another logging backend: Spark's lines stay
  }
}
