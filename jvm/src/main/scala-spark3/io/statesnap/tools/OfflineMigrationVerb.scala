package io.statesnap.tools

/**
 * The appended batch of the offline migration (`migrate`, and a deploy's on Spark 4.2+) that a deploy puts right
 * first where a crash left it ([[Reshape.recover]]): none on Spark 3.5, which has no transformWithState to migrate
 * offline. `scala-spark4` has 4.x's.
 */
private[tools] object OfflineMigrationVerb {
  val verb: Option[AppendedBatchVerb] = None
}
