package io.statesnap.testkit

import scala.jdk.CollectionConverters._

import io.statesnap.placement.{KeyPlacement, PartitionKey}
import io.statesnap.registration.SparkOperator
import io.statesnap.snapshot.StateKind
import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{JoinedRow, UnsafeRow}
import org.apache.spark.sql.execution.streaming.state.{SparkSingleStateSchemaFile, StateStoreId}
import org.apache.spark.sql.types.{DataType, StructType}
import org.apache.spark.unsafe.types.UTF8String

/** For tests/test_key_placement.py, through py4j: where [[KeyPlacement]] places the keys a test read from disk. */
object Placements {
  /**
   * The partition of each key (its UnsafeRow bytes, Spark's format version byte removed) of store `storeName` of
   * operator `operatorId` under `stateRoot`, an operator Spark calls `operator`, whose key schema Spark's schema file
   * records; `partitionKey` names the part hashed (`WholeKey`, `WithoutLastField`), or null for the operator's own.
   * A store that scans by a prefix of its key (a session window's) keeps the prefix and the rest as two rows: `rests`
   * holds the rest of each key (its last field), null for a store that keeps one row.
   */
  def partitions(stateRoot: String, operatorId: Long, storeName: String, operator: String, partitionKey: String,
      partitions: Int, keys: java.util.List[Array[Byte]], rests: java.util.List[Array[Byte]]): Array[Int] = {
    val (keySchema, _) = SparkSingleStateSchemaFile.read(StateStoreId(stateRoot, operatorId, 0, storeName),
      new Configuration()).getOrElse(throw new IllegalArgumentException(s"no schema file of $storeName"))
    val hashed = partitionKey match {
      case null => PartitionKey.of(SparkOperator.named(operator), storeName).fold(e => throw new
          IllegalArgumentException(e), identity)
      case "WholeKey" => PartitionKey.WholeKey
      case "WithoutLastField" => PartitionKey.WithoutLastField
    }
    placed(new KeyPlacement(keySchema, hashed, partitions), keySchema.length, keys, rests)
  }

  /** The partitions Spark's partitioning of a key `id STRING` places each of `ids` in, among `partitions`. */
  def partitionsOfIds(ids: java.util.List[String], partitions: Int): Array[Int] = {
    val placement = new KeyPlacement(StructType.fromDDL("id STRING"), PartitionKey.WholeKey, partitions)
    ids.asScala.map(id => placement.partition(InternalRow(UTF8String.fromString(id)))).toArray
  }

  /**
   * The same for keys of the key schema `keySchemaJson` (Spark's JSON), hashed as `partitionKey` (`WholeKey`,
   * `WithoutLastField`) says: a column family whose layout the caller knows.
   */
  def partitionsOfKeys(keySchemaJson: String, partitionKey: String, partitions: Int,
      keys: java.util.List[Array[Byte]], rests: java.util.List[Array[Byte]]): Array[Int] = {
    val keySchema = DataType.fromJson(keySchemaJson).asInstanceOf[StructType]
    val hashed = partitionKey match {
      case "WholeKey" => PartitionKey.WholeKey
      case "WithoutLastField" => PartitionKey.WithoutLastField
    }
    placed(new KeyPlacement(keySchema, hashed, partitions), keySchema.length, keys, rests)
  }

  /**
   * The same for the column family of a transformWithState variable of `kind` (`value`, `list`, `map`) whose key
   * schema is `keySchemaJson` (Spark's JSON).
   */
  def partitionsOfVariable(keySchemaJson: String, kind: String, partitions: Int, keys: java.util.List[Array[Byte]],
      rests: java.util.List[Array[Byte]]): Array[Int] = {
    val keySchema = DataType.fromJson(keySchemaJson).asInstanceOf[StructType]
    placed(new KeyPlacement(keySchema, PartitionKey.ofVariable(StateKind.named(kind)), partitions), keySchema.length,
      keys, rests)
  }

  private def placed(placement: KeyPlacement, keyFields: Int, keys: java.util.List[Array[Byte]],
      rests: java.util.List[Array[Byte]]): Array[Int] = {
    def row(fields: Int)(bytes: Array[Byte]) = {
      val r = new UnsafeRow(fields)
      r.pointTo(bytes, bytes.length)
      r
    }
    Option(rests).map(_.asScala) match {
      case None => keys.asScala.map(row(keyFields)).map(placement.partition).toArray
      case Some(rest) => keys.asScala.zip(rest).map { case (prefix, last) =>
        placement.partition(new JoinedRow(row(keyFields - 1)(prefix), row(1)(last)))
      }.toArray
    }
  }
}
