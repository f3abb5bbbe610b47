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
