package org.apache.spark.sql.execution.streaming.state.offline

import io.statesnap.StatesnapException
import io.statesnap.StatesnapException._

/**
 * The errors of the stores an offline job reads and writes with Spark's own providers, each built here with its error
 * class: a store the job cannot move whole, a value out of its layout, a store Spark's provider wrote otherwise than
 * the job writes it anew. `where` names the store. Each fails the job, whose verb rolls its batch back.
 */
private[sql] object OfflineStoreErrors {
  def unknownFamilies(where: String, user: Long, internal: Long, named: Seq[String]): StatesnapException =
    new StatesnapException(StateLayoutMismatch, s"$where keeps $user column families and $internal internal ones " +
      s"besides the default, where those the job moves are ${if (named.isEmpty) "none" else named.mkString(", ")}: " +
      "a family the job does not know would be lost, or one flagged otherwise counted as another kind")

  def entriesInDefaultFamily(where: String): StatesnapException =
    new StatesnapException(StateLayoutMismatch, s"$where holds entries in its default column family, where no " +
      "operator with column families keeps any: they would be lost")

  def keyEncodingNotMoved(where: String, family: String, encoding: String): StatesnapException =
    new StatesnapException(UnsupportedConfiguration, s"$where: the column family '$family' keeps its keys by " +
      s"$encoding, which this job does not move")

  def columnFamiliesNotMoved(where: String): StatesnapException =
    new StatesnapException(UnsupportedConfiguration, s"$where keeps column families (a transformWithState operator, " +
      "or a stream-stream join of state format 3), which this job does not move")

  def valueNotARow(where: String, schema: String, why: String): StatesnapException =
    new StatesnapException(StateLayoutMismatch, s"$where holds a value that is not a row of $schema: $why")

  def scratchStoreWroteOthers(provider: String, written: Seq[String], subdirectories: Seq[String],
      committed: String): StatesnapException =
    new StatesnapException(UnsupportedConfiguration, s"a store committed by $provider in a scratch directory wrote " +
      s"${written.mkString(", ")} beside ${subdirectories.mkString(", ")}, not the one version file $committed: " +
      "statesnap cannot write a store anew on this Spark build")

  def couldNotWrite(to: Any): StatesnapException = new StatesnapException(MigrationFailed, s"could not write $to")

  /** A checkpoint Spark 4 wrote (`what`: column families, checkpoint format v2), read on a Spark 3 minor. */
  def writtenBySpark4(what: String): StatesnapException = new StatesnapException(UnsupportedConfiguration, s"$what, " +
    s"which Spark 4 writes and Spark ${org.apache.spark.SPARK_VERSION} cannot read: read this checkpoint with the " +
    "Spark (and statesnap) that wrote it")
}
