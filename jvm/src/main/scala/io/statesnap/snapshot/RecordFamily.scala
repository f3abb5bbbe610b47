package io.statesnap.snapshot

import org.apache.spark.sql.types.{BinaryType, StringType, StructField, StructType}

/**
 * The reserved column family in which a store with column families (Spark 4.x) keeps statesnap's record of each
 * of its states, in the same store version as the bytes it describes: a record of [[StateSnapshotRecord]]'s format
 * per state name. The provider writes it (`SnapshotCatalog`); the offline readers and Spark's Avro encoder of the
 * family read it by these names and schemas.
 */
object RecordFamily {
  /** `$` marks it internal, as Spark's own TTL and timer families are; user state names cannot start with it. */
  val Name = "$statesnap_snapshots"
  val KeySchema: StructType = StructType(Seq(StructField("state", StringType, nullable = false)))
  val ValueSchema: StructType = StructType(Seq(StructField("record", BinaryType, nullable = false)))
}
