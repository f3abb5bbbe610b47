package io.statesnap.provider

import io.statesnap.snapshot.{StateKind, TtlValueSnapshot}
import org.apache.spark.sql.types.StructType
import org.junit.Assert._
import org.junit.Test

/** The one rule by which a statesnap record and Spark's schema files agree (`release`, `migrate`'s kept records). */
class SparkSchemaRecordsTest {
  private val key = StructType.fromDDL("k STRING")
  private def recorded(value: String) = TransformWithStateSchemaRecords.transformWithState("s", StateKind.Value, key,
    StructType.fromDDL(value))

  @Test def sparksFilesAgreeWhenTheyReadTheSameBytesAsTheRecordSays(): Unit = {
    assertTrue(SparkSchemaRecords.readsAs(recorded("n BIGINT NOT NULL, tag STRING"),
      StructType.fromDDL("n BIGINT, tag STRING")))
    // Spark 4.3 declares a TTL wrapper's value nullable, 4.1 not: the same bytes.
    val ttl = TtlValueSnapshot.wrap(StructType.fromDDL("n BIGINT"))
    assertTrue(SparkSchemaRecords.readsAs(recorded(ttl.toDDL), StructType.fromDDL(
      "value STRUCT<n: BIGINT>, ttlExpirationMs BIGINT")))
  }

  @Test def sparksFilesDisagreeOnATypeAFieldOrAName(): Unit = {
    val record = recorded("n BIGINT, tag STRING")
    assertFalse(SparkSchemaRecords.readsAs(record, StructType.fromDDL("n INT, tag STRING")))
    assertFalse(SparkSchemaRecords.readsAs(record, StructType.fromDDL("n BIGINT")))
    assertFalse(SparkSchemaRecords.readsAs(record, StructType.fromDDL("count BIGINT, tag STRING")))
  }
}
