package org.apache.spark.sql.execution.streaming.state

import java.util.UUID

import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.types.StructType

/**
 * Spark's own state schema files, read with Spark's own reader: what Spark's driver recorded for a state before
 * statesnap kept a record of its own, or after that record was lost.
 */
object StatesnapSparkSchemaFiles {
  /**
   * The key and value schemas in the schema file (format v2) Spark keeps for an operator without column
   * families, at `state/<operator>/0/[<store>/]_metadata/schema`: written by the driver in the query's first
   * batch, and never rewritten for these operators. None when there is no such file.
   */
  def singleState(id: StateStoreId, hadoopConf: Configuration): Option[(StructType, StructType)] = {
    val partitionZero = StateStoreProviderId(StateStoreId(id.checkpointRootLocation, id.operatorId, 0, id.storeName),
      UUID.randomUUID())
    new StateSchemaCompatibilityChecker(partitionZero, hadoopConf, Nil, None).readSchemaFiles().values.flatten
      .headOption.map(s => (s.keySchema, s.valueSchema))
  }
}
