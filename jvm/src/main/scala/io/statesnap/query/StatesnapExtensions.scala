package io.statesnap.query

import org.apache.spark.sql.SparkSessionExtensions

/**
 * statesnap's session extension (`spark.sql.extensions=io.statesnap.query.StatesnapExtensions`, set by
 * `statesnap.configure`): the decision on the driver ([[DriverDecision]]).
 */
class StatesnapExtensions extends (SparkSessionExtensions => Unit) {
  override def apply(extensions: SparkSessionExtensions): Unit =
    extensions.injectColumnar(session => new DriverDecision(session))
}

object StatesnapExtensions {
  /** The running sessions' extensions it was added to: weakly, a session's go with it. */
  private val installed = java.util.Collections.newSetFromMap(
    new java.util.WeakHashMap[SparkSessionExtensions, java.lang.Boolean]())

  /**
   * Adds the extension to a running session's `extensions` (for py4j, `statesnap.configure(spark)`), once: each query
   * runs in a clone of the session, which builds its rules from them, so it serves the queries started after.
   */
  def installOn(extensions: SparkSessionExtensions): Unit = installed.synchronized {
    if (installed.add(extensions)) new StatesnapExtensions()(extensions)
  }
}
