package org.apache.spark.sql.execution.streaming.state

import org.apache.avro.{SchemaValidationException, SchemaValidatorBuilder}
import org.apache.spark.sql.avro.SchemaConverters
import org.apache.spark.sql.types.StructType

/**
 * What Spark's own state schema check says of a change it refuses, in its own error class and first sentence, so that
 * statesnap's refusal of the same change carries them too and code that looks for Spark's class keeps working. The
 * checks are Spark's (`StateSchemaCompatibilityChecker`): keys, and values under UnsafeRow, by
 * [[StatesnapSparkSchemaCheck]]; values under Avro (transformWithState's schema evolution) by Avro's can-read rule
 * over Spark's own Avro form of each schema. Spark's advice to turn its check off is left out.
 */
object StatesnapSparkRefusal {
  /** Spark's refusal of a change from `stored` to `declared` (key and value), or None where Spark accepts it. */
  def of(storedKey: StructType, declaredKey: StructType, storedValue: StructType, declaredValue: StructType,
      avro: Boolean): Option[String] = {
    val refused =
      if (!StatesnapSparkSchemaCheck.compatible(storedKey, declaredKey)) {
        Some(StateStoreErrors.stateStoreKeySchemaNotCompatible(storedKey.toString, declaredKey.toString))
      } else if (avro) {
        val readable = try {
          new SchemaValidatorBuilder().canReadStrategy().validateAll().validate(
            SchemaConverters.toAvroTypeWithDefaults(declaredValue),
            java.util.Collections.singletonList(SchemaConverters.toAvroTypeWithDefaults(storedValue)))
          true
        } catch { case _: SchemaValidationException => false }
        if (readable) None
        else Some(StateStoreErrors.stateStoreInvalidValueSchemaEvolution(storedValue.toString, declaredValue.toString))
      } else if (!StatesnapSparkSchemaCheck.compatible(storedValue, declaredValue)) {
        Some(StateStoreErrors.stateStoreValueSchemaNotCompatible(storedValue.toString, declaredValue.toString))
      } else None
    refused.map(_.getMessage.linesIterator.next().trim)
  }
}
