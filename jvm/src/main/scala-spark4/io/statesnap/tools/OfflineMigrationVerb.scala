package io.statesnap.tools

/**
 * The appended batch of the offline migration (`migrate`, and a deploy's on Spark 4.2+) that a deploy puts right
 * first where a crash left it ([[Reshape.recover]]), as `migrate` run again does. `scala-spark3` has 3.5's: none.
 */
private[tools] object OfflineMigrationVerb {
  val verb: Option[AppendedBatchVerb] = Some(OfflineMigration.Migrating)
}
