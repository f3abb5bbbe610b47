package io.statesnap.snapshot

import org.apache.spark.sql.types.StructType

/**
 * How the rows of one state are laid out in bytes: the counterpart of Flink's `TypeSerializer`. A
 * [[StateSerializerSnapshot]] restores the serializer its state was written with, so old bytes stay readable.
 */
trait StateSerializer {
  /** The schema of the rows this serializer reads and writes. */
  def schema: StructType
}

/** Rows of `schema` in Spark's UnsafeRow layout: what RocksDB state holds under `encodingFormat=unsaferow`. */
final case class UnsafeRowSerializer(schema: StructType) extends StateSerializer
