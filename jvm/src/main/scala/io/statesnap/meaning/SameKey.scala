package io.statesnap.meaning

import io.statesnap.evolution.{ChangeKeyFix, RowSchemaEvolution}
import org.apache.spark.sql.catalyst.expressions.Cast
import org.apache.spark.sql.types.{DataType, StructType}

/**
 * The one definition of "the same key", for every path that judges one: a restart's stores (`KeyNames`, when no
 * meaning is recorded), the meaning recorded with a state (`MeaningDecision`) and a key change (`KeyChanges`). A key
 * is the same when each of its fields is the old field at its position, of the same type (nullability and metadata
 * aside: some minors record every state field nullable): the old field fed by the same column where the plan says
 * what feeds both keys ([[KeySources]]), else the old field of the same name. Spark compares keys by type and
 * position only; a key of the same types fed by other columns, or by the same ones in another order, is another key.
 */
object SameKey {
  /** Whether `newKey` is `oldKey`, by what feeds their fields where `sources` says it, else by name. */
  def apply(oldKey: StructType, newKey: StructType, sources: Option[KeySources]): Boolean =
    oldKey.length == newKey.length && newKey.indices.forall(i => oldFieldOf(oldKey, newKey, sources)(i).contains(i)) &&
      oldKey.zip(newKey).forall { case (o, n) => RowSchemaEvolution.sameLayout(o.dataType, n.dataType) }

  /** Whether keys fed by `now` are those fed by `recorded`: the same columns in the same order, under any names. */
  def columns(recorded: Seq[KeyColumn], now: Seq[KeyColumn]): Boolean = recorded.map(_.source) == now.map(_.source)

  /**
   * The old field each field of `newKey` is, if any: the one fed by the same column where `sources` describes both
   * keys, else the one of the same name.
   */
  def oldFieldOf(oldKey: StructType, newKey: StructType, sources: Option[KeySources]): Int => Option[Int] =
    sources.filter(_.describes(oldKey, newKey)) match {
      case Some(fed) => fed.oldIndexOf
      case None => i => Some(oldKey.fieldNames.indexOf(newKey(i).name)).filter(_ >= 0)
    }

  /**
   * The fix of a key changed from `oldKey` to `newKey`: change-key, given a value for each new field that is no old
   * field ([[oldFieldOf]]), and the explicit cast of each old field it [[narrows]]. The one rule of what a key change
   * must be given, for every refusal that prints it; a key change itself refuses a gained field given no value, and a
   * narrowing not given, by the same rules (`keys.KeyChanges`), so the printed call is one it takes.
   */
  def changeKeyFix(oldKey: StructType, newKey: StructType, sources: Option[KeySources]): ChangeKeyFix = {
    val oldOf = oldFieldOf(oldKey, newKey, sources)
    ChangeKeyFix(newKey.indices.flatMap { i =>
      val field = newKey(i)
      oldOf(i) match {
        case None => Some(field.name -> ChangeKeyFix.UnknownSql)
        case Some(j) if narrows(oldKey(j).dataType, field.dataType) =>
          Some(field.name -> s"CAST(${oldKey(j).name} AS ${field.dataType.sql})")
        case Some(_) => None
      }
    })
  }

  /**
   * Whether an old key field of type `old` kept as `now` may lose values (Spark's up-cast does not allow it: a
   * narrowing, a string read as a number): never implicit, since old keys could then meet under one.
   */
  def narrows(old: DataType, now: DataType): Boolean =
    !RowSchemaEvolution.sameLayout(old, now) && !Cast.canUpCast(old, now)

  /** The same where only the columns feeding both keys are known (a recorded meaning against the plan's). */
  def changeKeyFix(sources: KeySources): ChangeKeyFix = ChangeKeyFix.needing(sources.gained.map(_.name))
}

/**
 * The columns that feed an operator's old key (as recorded with its state) and its new one (as the new version's plan
 * says), field by field: a new field keeps the old field fed by the same column, under any name.
 */
final case class KeySources(old: Seq[KeyColumn], now: Seq[KeyColumn]) {
  /** Whether these are the sources of keys `oldKey` and `newKey` (the same fields, by name, in the same order). */
  def describes(oldKey: StructType, newKey: StructType): Boolean =
    old.map(_.name) == oldKey.fieldNames.toSeq && now.map(_.name) == newKey.fieldNames.toSeq

  /** The old field fed by the column that feeds new field `at`. */
  def oldIndexOf(at: Int): Option[Int] = Some(old.indexWhere(_.source == now(at).source)).filter(_ >= 0)

  /** The new fields fed by a column no old field is fed by: the old entries have no value for them. */
  def gained: Seq[KeyColumn] = now.indices.filter(oldIndexOf(_).isEmpty).map(now)
}
