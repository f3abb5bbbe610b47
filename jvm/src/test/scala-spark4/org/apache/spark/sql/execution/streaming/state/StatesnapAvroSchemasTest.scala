package org.apache.spark.sql.execution.streaming.state

import io.statesnap.snapshot.RecordFamily
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection
import org.apache.spark.sql.types.StructType
import org.junit.Assert._
import org.junit.Test

/** The schema ids statesnap gives Spark's Avro encoders, over the ids Spark's files list. */
class StatesnapAvroSchemasTest {
  private val v0 = StructType.fromDDL("n INT")
  private val v1 = StructType.fromDDL("n BIGINT, note STRING")

  /** Spark's files as its driver records them: value schemas `ids` of state "s" (every field nullable). */
  private def spark(ids: (Int, StructType)*): StateSchemaProvider = {
    val values = ids.map { case (id, schema) =>
      StateSchemaMetadataKey("s", id.toShort, isKey = false) -> StatesnapAvroSchemas.metadata(schema)
    }
    val key = StateSchemaMetadataKey("s", 0, isKey = true) -> StatesnapAvroSchemas.metadata(StructType.fromDDL("id STRING"))
    new InMemoryStateSchemaProvider(StateSchemaMetadata((values :+ key).toMap))
  }

  @Test def theTargetIsTheLastIdThatSaysTheSchemaElseOneUp(): Unit = {
    val schemas = new StatesnapAvroSchemas(spark(0 -> v0, 1 -> v1))
    // A nullability Spark's driver added is the same Avro record: no new id.
    assertEquals(1, schemas.target("s", StructType(v1.fields.map(_.copy(nullable = false)))))
    assertEquals(2, schemas.target("s", StructType.fromDDL("n BIGINT, note STRING, more INT")))
    assertEquals(2, schemas.getCurrentStateSchemaId("s", false))
    assertEquals(0, schemas.getCurrentStateSchemaId("s", true)) // keys never evolve: Spark's id
    assertEquals(StructType.fromDDL("n BIGINT, note STRING, more INT"),
      schemas.getSchemaMetadataValue(StateSchemaMetadataKey("s", 2, isKey = false)).sqlSchema)
    assertEquals(v0, schemas.getSchemaMetadataValue(StateSchemaMetadataKey("s", 0, isKey = false)).sqlSchema)
    assertEquals(Seq(0.toShort -> v0, 1.toShort -> v1), schemas.valueSchemas("s"))
    assertEquals(0, new StatesnapAvroSchemas(spark()).target("new", v0))
  }

  @Test def statesnapsRecordFamilyIsId0AndItsRecordsReadBackOffline(): Unit = {
    val schemas = new StatesnapAvroSchemas(spark(0 -> v0))
    assertEquals(0, schemas.getCurrentStateSchemaId(RecordFamily.Name, false))
    val encoder = new AvroStateEncoder(NoPrefixKeyStateEncoderSpec(RecordFamily.KeySchema),
      RecordFamily.ValueSchema, Some(schemas), RecordFamily.Name)
    val record = Array[Byte](1, 2, 3, 0, -1)
    val encoded = encoder.encodeValue(UnsafeProjection.create(RecordFamily.ValueSchema)(InternalRow(record)))
    assertEquals(Some(0.toShort), StatesnapAvroSchemas.schemaIdOf(encoded))
    assertArrayEquals(record, StatesnapAvroSchemas.catalogRecord(encoded))
    assertEquals(None, StatesnapAvroSchemas.schemaIdOf(Array[Byte](1, 0, 0)))
    assertThrows(classOf[IllegalArgumentException], () => StatesnapAvroSchemas.catalogRecord(Array[Byte](0, 1, 0, 2)))
  }
}
