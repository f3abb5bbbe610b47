package org.apache.spark.sql.execution.streaming.state

import io.statesnap.StatesnapException
import io.statesnap.StatesnapException._

/**
 * The errors of what this Spark build has or writes that statesnap does not know, each built here with its error
 * class: a minor's internals statesnap reaches into differ from those its jar was built for, or a checkpoint names
 * what this minor cannot read. Raised before any state byte is rewritten.
 */
private[sql] object SparkBuildErrors {
  def unknownVariableType(name: String, sparkType: String): StatesnapException =
    new StatesnapException(UnsupportedConfiguration, s"its state variable '$name' is of type '$sparkType', which " +
      "statesnap does not know")

  def unknownMergeOperatorVersion(version: String): StatesnapException =
    new StatesnapException(UnsupportedConfiguration, s"the offset log pins RocksDB merge operator version $version, " +
      s"which Spark ${org.apache.spark.SPARK_VERSION} does not know")

  def rocksDBLacks(missing: String): StatesnapException =
    new StatesnapException(UnsupportedConfiguration, s"this Spark build's RocksDB has no $missing")

  def cannotMigrateHere(describe: String, why: String): StatesnapException =
    new StatesnapException(UnsupportedConfiguration, s"$describe needs a migration, which statesnap cannot run " +
      s"here: $why. Nothing was rewritten.")
}
