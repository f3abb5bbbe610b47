package io.statesnap.snapshot

import org.apache.spark.sql.types.StructType

/**
 * How the rows of one state are laid out in bytes: today Spark's UnsafeRow layout of a schema.
 *
 * The counterpart of Flink's `TypeSerializer`: a serializer can produce a [[StateSerializerSnapshot]] of its
 * configuration, which is persisted beside the state bytes, and a snapshot can restore a serializer that
 * reads bytes written under the old configuration.
 */
trait StateSerializer {
  /** The schema of the rows this serializer reads and writes. */
  def schema: StructType

  /** A snapshot of this serializer's configuration, to be persisted with the state. */
  def snapshotConfiguration(): StateSerializerSnapshot
}

/** Rows of `schema` in Spark's UnsafeRow layout: what RocksDB state holds under `encodingFormat=unsaferow`. */
final case class UnsafeRowSerializer(schema: StructType) extends StateSerializer {
  override def snapshotConfiguration(): StateSerializerSnapshot = new RowSchemaSnapshot(schema)
}
