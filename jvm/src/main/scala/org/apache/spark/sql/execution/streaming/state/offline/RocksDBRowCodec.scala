package org.apache.spark.sql.execution.streaming.state.offline

import org.apache.spark.sql.catalyst.expressions.UnsafeRow

/**
 * How Spark's RocksDB provider stores a key and a value of a store without column families, both ways, by its own
 * encoders ([[StatesnapStoreFiles.rocksDBCodec]]): the bytes an offline job moves, and the rows Spark's default
 * provider keeps. A decoded row may point into the bytes it was decoded from, or be reused by the next decode.
 */
final case class RocksDBRowCodec(encodeKey: UnsafeRow => Array[Byte], encodeValue: UnsafeRow => Array[Byte],
    decodeKey: Array[Byte] => UnsafeRow, decodeValue: Array[Byte] => UnsafeRow)
