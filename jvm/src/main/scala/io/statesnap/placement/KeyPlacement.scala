package io.statesnap.placement

import io.statesnap.ScalaCompat._
import io.statesnap.registration.SparkOperator
import io.statesnap.snapshot.StateKind
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{BoundReference, Expression, Literal, UnsafeProjection}
import org.apache.spark.sql.catalyst.plans.physical.HashPartitioning
import org.apache.spark.sql.types.StructType

/**
 * Where Spark's own partitioning of a stateful operator places a key of one of its stores: the partition whose store
 * the operator reads it from. Every stateful operator requires its input clustered by its key expressions
 * (`StatefulOperatorPartitioning.getCompatibleDistribution`, strict under `statefulOperator.useStrictDistribution`,
 * which every query started on Spark 3.3 or later pins; a join always), whose partitioning is
 * `HashPartitioning(expressions, n)`; a store's key row holds those expressions first, in order ([[PartitionKey]]).
 * The partition is that `HashPartitioning`'s own `partitionIdExpression`, evaluated on the key row: Spark's code,
 * whichever hash its minor uses (Murmur3 on 3.5, the collation-aware Murmur3 on 4.x). Hashing a struct equals hashing
 * its fields in order (`InterpretedHashFunction`), so a nested key places as its fields would.
 * docs/research/spark-state-partitioning.md has the evidence, per minor. Several counts are placed at once, by one
 * projection (a move checks a key's partition under the count it was written in and places it under the new one).
 * Not thread-safe: one per task.
 *
 * @param counts the numbers of partitions a key is placed under, in the order [[partitions]] gives them
 */
final class KeyPlacement(keySchema: StructType, partitionKey: PartitionKey, counts: Seq[Int]) {
  require(counts.nonEmpty && counts.forall(_ > 0), s"a query has at least one partition, not ${counts.mkString(", ")}")

  def this(keySchema: StructType, partitionKey: PartitionKey, partitions: Int) =
    this(keySchema, partitionKey, Seq(partitions))

  private val hashed: Seq[Expression] = partitionKey.ordinals(keySchema).map { i =>
    BoundReference(i, keySchema(i).dataType, keySchema(i).nullable)
  }
  // A key without fields (a global aggregation, a limit): Spark plans such an operator on one partition (AllTuples).
  private val projection = UnsafeProjection.create(
    if (hashed.isEmpty) counts.map(_ => Literal(0)) else counts.map(HashPartitioning(hashed, _).partitionIdExpression))

  /** The partition Spark reads `key` (a row of the store's key schema) from, under the first count. */
  def partition(key: InternalRow): Int = partitions(key).getInt(0)

  /** The partitions Spark reads `key` from, under each count in order: a row the next call reuses. */
  def partitions(key: InternalRow): InternalRow = projection(key)
}

/** The part of a store's key row that is the operator's key expressions, which Spark's partitioning hashes. */
sealed trait PartitionKey {
  /** The ordinals of the key row's fields that are hashed, in order. */
  def ordinals(keySchema: StructType): Seq[Int]
}

object PartitionKey {
  /** The whole key row: aggregations, dedups, group state. */
  case object WholeKey extends PartitionKey {
    override def ordinals(keySchema: StructType): Seq[Int] = keySchema.indices
  }

  /** The key row but its last field: a session window's session start, a join's value index, a map's user key. */
  case object WithoutLastField extends PartitionKey {
    override def ordinals(keySchema: StructType): Seq[Int] = {
      require(keySchema.nonEmpty, "a key with a field of its own after the operator's key has at least one field")
      keySchema.indices.dropRight(1)
    }
  }

  /**
   * The partition key of the stores of `operator`, one of the stores a join keeps by name or column family
   * (`storeName`), as Spark's partitioning of that operator hashes it.
   * @return Left with why, for an operator statesnap does not place (yet)
   */
  def of(operator: SparkOperator, storeName: String): Either[String, PartitionKey] = operator match {
    case SparkOperator.Aggregation | SparkOperator.ArbitraryState | SparkOperator.Dedup |
         SparkOperator.DedupWithinWatermark | SparkOperator.GlobalLimit => Right(WholeKey)
    case SparkOperator.SessionWindow => Right(WithoutLastField)
    case join: SparkOperator.StreamStreamJoin.type =>
      if (!join.isStore(storeName)) Left(s"a stream-stream join keeps no store named '$storeName' (Spark 3.5 to 4.3 " +
        s"keep ${join.stores.mkString(", ")})")
      else Right(if (join.keepsRows(storeName)) WithoutLastField else WholeKey)
    case SparkOperator.TransformWithState(name) => Left(s"$name keeps a column family per state variable, each " +
      "placed by its kind (PartitionKey.ofVariable)")
    case SparkOperator.Unknown(name) => Left(s"'$name' is no stateful operator Spark 3.5 to 4.3 has")
  }

  /**
   * The partition key of a transformWithState variable's column family of `kind`: a value or list state is keyed by
   * the grouping key, a map state by `struct<key, userKey>` (the grouping key, then the user key). Spark's own
   * families (timers, TTL indexes) are not a user's variable: not placed yet.
   */
  def ofVariable(kind: StateKind): PartitionKey = kind match {
    case StateKind.Map => WithoutLastField
    case StateKind.Value | StateKind.List => WholeKey
  }
}
