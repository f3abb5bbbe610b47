package org.apache.spark.sql.execution.streaming.state

import org.apache.spark.sql.types.StructType

/**
 * What Spark's own state schema check says of a change it refuses, in its error class: Spark 3.5's check raises an
 * error without a class (`StateSchemaNotCompatible`), so there is nothing of Spark's for statesnap's refusal to carry.
 */
object StatesnapSparkRefusal {
  def of(storedKey: StructType, declaredKey: StructType, storedValue: StructType, declaredValue: StructType,
      avro: Boolean): Option[String] = None
}
