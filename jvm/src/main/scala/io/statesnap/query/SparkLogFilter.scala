package io.statesnap.query

import java.util.UUID
import java.util.concurrent.atomic.AtomicBoolean

import scala.util.Try
import scala.util.control.NonFatal

import io.statesnap.{ProviderClasses, StatesnapException}
import org.apache.logging.log4j.{Level, LogManager, Marker}
import org.apache.logging.log4j.core.{Filter, LogEvent, Logger, LoggerContext}
import org.apache.logging.log4j.core.filter.AbstractFilter
import org.apache.logging.log4j.message.Message
import org.apache.spark.TaskContext

/**
 * Keeps out of the driver's output what Spark's own classes log about statesnap's work, which says nothing the user
 * can act on and reads as an alarm; every other event passes as before, and every line of statesnap's:
 *  - a statesnap refusal logged again: the refusal is the query's exception, and the listener says it once at ERROR
 *    as the query terminates ([[StatesnapQueryListener]]); Spark's layers log the same exception again with their
 *    stack traces (the stream execution's "terminated with error", a task's failure), which buried it under some
 *    200 lines. An event of another logger whose throwable carries a statesnap refusal is dropped.
 *  - Spark 3.5's state schema check, which runs (and logs the mismatch at ERROR) even where it is off, in a task of
 *    a query statesnap serves: statesnap turned the check off for that query, since it decides the change itself.
 *  - Spark's warning that a checkpoint's pinned provider replaces statesnap's, the session's: the checkpoint keeps
 *    the provider it was created with, which statesnap means (a transformWithState query on Spark 4.2+), or names
 *    at WARN itself with what to do ([[StatesnapQueryListener]]).
 */
private[query] final class SparkLogFilter extends AbstractFilter(Filter.Result.DENY, Filter.Result.NEUTRAL) {
  // A filter of the whole configuration is asked before an event is made, with what the logger was given.
  override def filter(logger: Logger, level: Level, marker: Marker, msg: AnyRef, t: Throwable): Filter.Result =
    decide(logger.getName, level, String.valueOf(msg), t)
  override def filter(logger: Logger, level: Level, marker: Marker, msg: Message, t: Throwable): Filter.Result =
    decide(logger.getName, level, Option(msg).map(_.getFormattedMessage).orNull, t)
  // What an slf4j logger (Spark's) logs without a throwable arrives here, its parameters (null when none) not yet in
  // the message.
  override def filter(logger: Logger, level: Level, marker: Marker, msg: String, params: AnyRef*): Filter.Result =
    decide(logger.getName, level, msg, Option(params).flatMap(_.lastOption).collect { case t: Throwable => t }.orNull)
  override def filter(event: LogEvent): Filter.Result = decide(event.getLoggerName, event.getLevel,
    Option(event.getMessage).map(_.getFormattedMessage).orNull, event.getThrown)

  // Asked for every call of every logger, before its level is checked: the message is formatted only for the one
  // logger and level whose text decides.
  private def decide(loggerName: String, level: Level, message: => String, thrown: Throwable): Filter.Result = {
    val name = String.valueOf(loggerName)
    if (name.startsWith("io.statesnap")) onMismatch
    else if (carriesRefusal(thrown)) onMatch
    else if (name == SparkLogFilter.SchemaChecker && level == Level.ERROR && inServedQuery) onMatch
    else if (name.endsWith(SparkLogFilter.OffsetSeqMetadata) && level == Level.WARN && replacesStatesnap(message))
      onMatch
    else onMismatch
  }

  private def replacesStatesnap(message: String): Boolean = message != null &&
    message.contains(SparkLogFilter.ProviderConf) && message.contains(ProviderClasses.Statesnap)

  private def carriesRefusal(thrown: Throwable): Boolean =
    Iterator.iterate(thrown)(_.getCause).takeWhile(_ != null).take(20).exists(_.isInstanceOf[StatesnapException])

  /** Whether the logging thread runs a task of a query statesnap serves (its stores' check is off). */
  private def inServedQuery: Boolean = Option(TaskContext.get())
    .flatMap(task => Option(task.getLocalProperty(SparkLogFilter.QueryIdProperty)))
    .flatMap(id => Try(UUID.fromString(id)).toOption)
    .exists(StatesnapQueryListener.served.contains)
}

private[query] object SparkLogFilter {
  private val SchemaChecker = "org.apache.spark.sql.execution.streaming.state.StateSchemaCompatibilityChecker"
  /** The offset log's metadata class, in a package of its own since Spark 4.1. */
  private val OffsetSeqMetadata = ".OffsetSeqMetadata"
  private val ProviderConf = "spark.sql.streaming.stateStore.providerClass"
  /** The local property Spark's stream execution sets to its query's id, which its tasks carry. */
  private val QueryIdProperty = "sql.streaming.queryId"
  private val installed = new AtomicBoolean(false)

  /** Adds the filter to the driver's logging configuration, once per JVM; logging it cannot reach is left as is. */
  def install(): Unit = if (installed.compareAndSet(false, true)) try {
    // The context Spark's own classes log to (statesnap's jar may sit in a class loader of its own).
    LogManager.getContext(classOf[org.apache.spark.SparkContext].getClassLoader, false) match {
      case context: LoggerContext =>
        val filter = new SparkLogFilter
        filter.start()
        context.getConfiguration.addFilter(filter)
        context.updateLoggers()
      case _ =>
    }
  } catch {
    case NonFatal(_) => // another logging backend: Spark's lines stay
  }
}
