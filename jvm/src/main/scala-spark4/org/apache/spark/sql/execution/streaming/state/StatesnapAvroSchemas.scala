package org.apache.spark.sql.execution.streaming.state

import java.util.concurrent.ConcurrentHashMap

import scala.util.control.NonFatal

import io.statesnap.snapshot.RecordFamily
import org.apache.spark.sql.avro.SchemaConverters
import org.apache.spark.sql.types.StructType

/**
 * The schema ids of an Avro-encoded transformWithState store (`encodingFormat=avro`), as statesnap keeps them: the
 * `StateSchemaProvider` Spark's RocksDB provider encodes and decodes with, wrapped around the one Spark's driver
 * built from its schema files at the start of the query run. Every Avro value starts with the id of the schema that
 * wrote it, which Spark resolves against that id's schema on every read.
 *
 * statesnap's decision, not Spark's check (off for the query), says what a state's schema is now. So the id new and
 * migrated entries are written under ([[target]]) is the one Spark's schema files name last for the state if it says
 * the declared schema, else one up from it; statesnap's commit then records that id in Spark's files
 * ([[StatesnapSparkSchemaFiles.Family.avroSchemaId]]), so that Spark's reader and Spark's provider after
 * `release` decode every entry under the schema it was written with. statesnap's own record family, which Spark's
 * driver does not know, has id 0 with its fixed schemas.
 */
final class StatesnapAvroSchemas(spark: StateSchemaProvider) extends StateSchemaProvider {
  import StatesnapAvroSchemas._

  /** Per state: the id its entries are written under in this query run, and the declared schema. */
  private val targets = new ConcurrentHashMap[String, (Short, StateSchemaMetadataValue)]

  /**
   * Fixes the id entries of `state` declared as `valueSchema` are written under from now on in this query run, as
   * [[StatesnapSparkSchemaFiles.updateTransformWithState]] numbers it. Called on the state's first access, before
   * Spark's encoder writes or reads an entry of it (its encoder asks for the id once, then keeps it for the run).
   */
  def target(state: String, valueSchema: StructType): Short = {
    val latest = latestValueId(state)
    val id = latest match {
      case Some(id) if writtenWith(state, id).exists(sameAvro(_, valueSchema)) => id
      case Some(id) => (id + 1).toShort
      case None => 0.toShort
    }
    targets.put(state, (id, metadata(valueSchema)))
    id
  }

  /** The id [[target]] fixed for `state` in this query run, if it did. */
  def targetOf(state: String): Option[Short] = Option(targets.get(state)).map(_._1)

  /** The highest value schema id Spark's files give `state`, if they list it. */
  def latestValueId(state: String): Option[Short] =
    try Some(spark.getCurrentStateSchemaId(state, false)) catch { case NonFatal(_) => None }

  /** The value schema Spark's files say entries of `state` under `id` were written with, if they list that id. */
  def writtenWith(state: String, id: Short): Option[StructType] =
    try Some(spark.getSchemaMetadataValue(StateSchemaMetadataKey(state, id, false)).sqlSchema) catch {
      case NonFatal(_) => None
    }

  /** Every value schema id Spark's files list for `state`, with its schema, lowest first. */
  def valueSchemas(state: String): Seq[(Short, StructType)] =
    latestValueId(state).toSeq.flatMap(latest => (0 to latest).flatMap { i =>
      writtenWith(state, i.toShort).map(i.toShort -> _)
    })

  override def getCurrentStateSchemaId(colFamilyName: String, isKey: Boolean): Short =
    if (colFamilyName == RecordFamily.Name) 0
    else Option(targets.get(colFamilyName)).filter(_ => !isKey).fold(
      spark.getCurrentStateSchemaId(colFamilyName, isKey))(_._1)

  override def getSchemaMetadataValue(key: StateSchemaMetadataKey): StateSchemaMetadataValue =
    if (key.colFamilyName == RecordFamily.Name) catalogSchemas(key)
    else Option(targets.get(key.colFamilyName)).filter { case (id, _) => !key.isKey && id == key.schemaId }
      .fold(spark.getSchemaMetadataValue(key))(_._2)
}

object StatesnapAvroSchemas {
  /** Spark's Avro form of a schema, as its driver builds it from a schema file: every field a `[null, T]` union. */
  def metadata(schema: StructType): StateSchemaMetadataValue =
    StateSchemaMetadataValue(schema, SchemaConverters.toAvroTypeWithDefaults(schema))

  private lazy val catalogKey = metadata(RecordFamily.KeySchema)
  private lazy val catalogValue = metadata(RecordFamily.ValueSchema)

  /** statesnap's record family in an Avro store: one schema each for keys and values, id 0. */
  private def catalogSchemas(key: StateSchemaMetadataKey): StateSchemaMetadataValue = {
    require(key.schemaId == 0, s"statesnap's record family has schema id 0 only, not ${key.schemaId}")
    if (key.isKey) catalogKey else catalogValue
  }

  /**
   * Whether entries of `a` and of `b` are the same Avro records: Spark's driver records a state's schema with every
   * field nullable, which its Avro form (every field a `[null, T]` union) is anyway.
   */
  def sameAvro(a: StructType, b: StructType): Boolean =
    SchemaConverters.toAvroTypeWithDefaults(a) == SchemaConverters.toAvroTypeWithDefaults(b)

  /** The schema id an Avro-encoded value (or list element) `[0][id: int16, native order][Avro]` was written under. */
  def schemaIdOf(encoded: Array[Byte]): Option[Short] =
    if (encoded.length < 3 || encoded(0) != 0) None
    else Some(org.apache.spark.unsafe.Platform.getShort(encoded, org.apache.spark.unsafe.Platform.BYTE_ARRAY_OFFSET + 1))

  /**
   * The record bytes of one value of statesnap's record family in an Avro store, decoded by Spark's own decoder
   * (the offline readers: an online store reads them through Spark's store).
   */
  def catalogRecord(encoded: Array[Byte]): Array[Byte] = {
    require(schemaIdOf(encoded).contains(0.toShort), "not an Avro value of statesnap's record family " +
      "(no version byte 0 and schema id 0)")
    val spec = NoPrefixKeyStateEncoderSpec(RecordFamily.KeySchema)
    new AvroStateEncoder(spec, RecordFamily.ValueSchema, Some(CatalogOnly), RecordFamily.Name)
      .decodeValue(encoded).getBinary(0)
  }

  private object CatalogOnly extends StateSchemaProvider {
    override def getCurrentStateSchemaId(colFamilyName: String, isKey: Boolean): Short = 0
    override def getSchemaMetadataValue(key: StateSchemaMetadataKey): StateSchemaMetadataValue = catalogSchemas(key)
  }
}
