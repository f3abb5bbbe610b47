package org.apache.spark.sql.execution.streaming.state

import org.apache.spark.sql.types.StructType
import org.junit.Assert._
import org.junit.Test

/** What Spark's own check says of a change, as statesnap's refusals carry it ([[StatesnapSparkRefusal]]). */
class StatesnapSparkRefusalTest {
  private val key = StructType.fromDDL("id STRING")

  private def said(oldValue: String, newValue: String, avro: Boolean, newKey: StructType = key): Option[String] =
    StatesnapSparkRefusal.of(key, newKey, StructType.fromDDL(oldValue), StructType.fromDDL(newValue), avro)

  @Test def aNarrowingUnderAvroIsSparksInvalidSchemaEvolutionNewSchemaFirst(): Unit = {
    val words = said("id BIGINT", "id INT", avro = true).get
    assertTrue(words, words.startsWith("[STATE_STORE_INVALID_VALUE_SCHEMA_EVOLUTION] Schema evolution is not " +
      "possible new value_schema=StructType(StructField(id,IntegerType"))
    assertTrue(words, words.contains("old value_schema=StructType(StructField(id,LongType"))
  }

  @Test def aChangedLayoutUnderUnsafeRowIsSparksValueSchemaNotCompatibleWithoutItsAdviceToTurnTheCheckOff(): Unit = {
    val words = said("id BIGINT", "id INT", avro = false).get
    assertEquals("[STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE] Provided value schema does not match existing state " +
      "value schema.", words)
  }

  @Test def aChangedKeyIsSparksKeySchemaNotCompatible(): Unit =
    assertTrue(said("n INT", "n INT", avro = false, StructType.fromDDL("id INT")).get
      .startsWith("[STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE]"))

  @Test def whatSparkAcceptsCarriesNothing(): Unit = {
    assertEquals("Avro reads an int as a long", None, said("id INT", "id BIGINT", avro = true))
    assertEquals("Spark compares UnsafeRow fields by position and type", None,
      said("id BIGINT", "renamed BIGINT", avro = false))
  }
}
