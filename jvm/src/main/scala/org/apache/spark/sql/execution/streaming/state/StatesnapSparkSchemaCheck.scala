package org.apache.spark.sql.execution.streaming.state

import org.apache.spark.sql.types.{DataType, StructType}

/**
 * Spark's own state schema comparison (what `StateSchemaCompatibilityChecker` asks of keys, and of values under
 * UnsafeRow): field names are ignored, positions and types must match, and a field may become non-nullable but
 * not nullable. statesnap compares keys, and the state of operators it only guards, exactly this way, so it
 * accepts and refuses what Spark's check would.
 */
object StatesnapSparkSchemaCheck {
  def compatible(stored: StructType, declared: StructType): Boolean =
    DataType.equalsIgnoreNameAndCompatibleNullability(declared, stored)
}
