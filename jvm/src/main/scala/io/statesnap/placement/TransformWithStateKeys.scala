package io.statesnap.placement

import io.statesnap.evolution.RowSchemaEvolution.sameLayout
import org.apache.spark.sql.types.StructType

/**
 * Where each column family of a transformWithState store holds the operator's grouping key, which Spark's
 * partitioning hashes (the operator requires its input clustered by its grouping attributes), as [[StoredKey]]s.
 * The layouts, from Spark's v3 schema file and the bytes (verified on 4.0.5, 4.1.4 and 4.3.0, the same on each;
 * docs/research/spark-state-partitioning.md §6):
 *  - keyed by the grouping key alone, `[0][row]`: a value or list variable, a list's counters (`$rowCounter_`,
 *    `$count_`, `$min_`);
 *  - scanned by the grouping key as a prefix, `struct<key, ...>`: a map variable (`struct<key, userKey>`), timers by
 *    key (`$procTimers_keyToTimestamp`, `$eventTimers_keyToTimestamp`: `struct<key, expiryTimestampMs>`);
 *  - scanned by a range of a time first, the grouping key in the rest: timers by time (`struct<expiryTimestampMs,
 *    key>`), TTL indexes (`$ttl_`: `struct<expirationMs, elementKey>`, the element key the grouping key, or for a map
 *    `struct<key, userKey>`).
 * The grouping key itself is what the families keyed by it alone, or by it as a prefix, say; they must agree. A
 * layout found at the wrong field would still be caught: every key must have been read from the partition Spark's
 * partitioning of it writes it to ([[StoredKeyPlacement]]).
 */
object TransformWithStateKeys {
  /** A family's key as Spark's schema file says it: its schema, and the fields it is scanned by, if any. */
  final case class Layout(name: String, keySchema: StructType, prefixFields: Int, rangeOrdinals: Seq[Int])

  /**
   * The stored key of each family of `families`, by name.
   * @return Left with why, for a layout statesnap does not know where the grouping key is in
   */
  def storedKeys(families: Seq[Layout]): Either[String, Map[String, StoredKey]] = {
    val declared = families.flatMap { f =>
      if (f.rangeOrdinals.nonEmpty || f.prefixFields > 1) None
      else if (f.prefixFields == 0) Some(f.name -> f.keySchema)
      else structAt(f.keySchema, Seq(0)).map(f.name -> _)
    }
    declared.headOption.fold[Either[String, Map[String, StoredKey]]](
      if (families.isEmpty) Right(Map.empty) else Left(s"none of its column families (${names(families)}) is " +
        "keyed by the grouping key alone or by it as a prefix, which says what the grouping key is")) {
      case (first, grouping) =>
        declared.find(d => !sameLayout(d._2, grouping)).map { case (other, key) => Left(s"its column families " +
          s"'$first' and '$other' hold different grouping keys (${grouping.simpleString}, ${key.simpleString})")
        }.getOrElse(families.foldLeft[Either[String, Map[String, StoredKey]]](Right(Map.empty)) { (found, f) =>
          found.flatMap(keys => storedKey(f, grouping).map(k => keys + (f.name -> k)))
        })
    }
  }

  /**
   * Where `f`'s key row holds the grouping key, `stored` being its stored key: the ordinals of the nested structs
   * leading to it (none: the row itself), counted in the whole key row (a range's fields too).
   */
  def groupingPath(f: Layout, stored: StoredKey): Seq[Int] = stored match {
    case StoredKey.Whole(_, _) => Nil
    case StoredKey.Split(_, _, true, path) => path
    case StoredKey.Split(_, _, false, path) =>
      f.keySchema.indices.filterNot(f.rangeOrdinals.contains)(path.head) +: path.tail
  }

  private def storedKey(f: Layout, grouping: StructType): Either[String, StoredKey] = {
    def missing = Left(s"its column family '${f.name}' keeps ${f.keySchema.simpleString}" +
      s"${if (f.rangeOrdinals.nonEmpty) s" (a range of fields ${f.rangeOrdinals.mkString(", ")} first)" else ""}, " +
      s"where statesnap does not find the grouping key ${grouping.simpleString}")
    if (f.rangeOrdinals.nonEmpty) {
      val rest = StructType(f.keySchema.zipWithIndex.collect {
        case (field, i) if !f.rangeOrdinals.contains(i) => field
      })
      Seq(Seq(0), Seq(0, 0)).find(p => structAt(rest, p).exists(sameLayout(_, grouping)))
        .map(p => Right(StoredKey.Split(None, rest, inFirst = false, p))).getOrElse(missing)
    } else if (f.prefixFields == 0) {
      if (sameLayout(f.keySchema, grouping)) Right(StoredKey.Whole(f.keySchema, PartitionKey.WholeKey)) else missing
    } else {
      val first = StructType(f.keySchema.take(f.prefixFields))
      if (structAt(first, Seq(0)).exists(sameLayout(_, grouping))) Right(StoredKey.Split(Some(first),
        StructType(f.keySchema.drop(f.prefixFields)), inFirst = true, Seq(0)))
      else missing
    }
  }

  /** The struct at `path` (ordinals of nested structs) in `schema`, if every step is a struct field. */
  private def structAt(schema: StructType, path: Seq[Int]): Option[StructType] =
    path.foldLeft(Option(schema)) { (at, i) =>
      at.filter(_.length > i).map(_(i).dataType).collect { case s: StructType => s }
    }

  private def names(families: Seq[Layout]): String = families.map(_.name).mkString(", ")
}
