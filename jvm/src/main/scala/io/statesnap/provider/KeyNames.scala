package io.statesnap.provider

import io.statesnap.evolution.{ChangeKeyFix, ProblemAt, ProblemSide, SchemaProblem}
import io.statesnap.meaning.SameKey
import io.statesnap.registration.SparkOperator
import io.statesnap.snapshot.{MapStateKey, StateKind, StateSnapshotRecord}
import org.apache.spark.sql.execution.streaming.state.StatesnapSparkSchemaCheck
import org.apache.spark.sql.types.StructType

/**
 * A key whose fields keep their types and positions under other names: Spark's check compares keys by type and
 * position and passes it, and the new version would read every old key as another (`groupBy("user")` restarted as
 * `groupBy("region")`, both strings: each region's count starting from a user's; `(user, region)` restarted as
 * `(region, user)`: every old key looked up in the wrong order). Until the plan's meaning of each key field is
 * recorded, its name is what says which column feeds it: a name that changed is refused with the key change that
 * makes it, which compares keys the same way ([[SameKey]], by name where no meaning is recorded). A map state's
 * user key evolves by its own rules ([[MapUserKeys]]): its grouping key is the one held here. A stream-stream join's
 * stores are left to Spark's comparison: no key change moves them.
 */
private[provider] object KeyNames {
  /** The problem of a key `current` declares under other names than `old` recorded it, or none. */
  def renamed(old: StateSnapshotRecord, current: StateSnapshotRecord): Seq[SchemaProblem] = {
    val (was, now) = (placing(old), placing(current))
    if (SparkOperator.StreamStreamJoin.isStore(current.stateName) || !StatesnapSparkSchemaCheck.compatible(was, now) ||
      SameKey(was, now, None)) Nil
    else {
      val changed = was.fieldNames.zip(now.fieldNames).filter { case (a, b) => a != b }
      val reordered = was.fieldNames.sorted.sameElements(now.fieldNames.sorted)
      val what =
        if (reordered) s"its fields are reordered, (${was.fieldNames.mkString(", ")}) -> " +
          s"(${now.fieldNames.mkString(", ")})"
        else if (changed.isEmpty) "a field nested in it is renamed"
        else changed.map { case (a, b) => s"`$a` is now `$b`" }.mkString(", ")
      // What the key change must be given (the one rule, by name here): each field the key gains valued by the old
      // field it renames, which keeps its position and type; a field kept under its name but narrowed, its cast.
      val fix = SameKey.changeKeyFix(was, now, None)
      val gained = fix.keys.collect { case (field, ChangeKeyFix.UnknownSql) => field }
      val keys = fix.keys.map { case (field, sql) => field -> (if (gained.contains(field))
        was(now.fieldIndex(field)).name else sql) }
      val each = if (gained.isEmpty) "" else ", each new field's value the old field it renames, or, where another " +
        "column feeds it, the SQL over the old key and value that derives it"
      Seq(SchemaProblem(ProblemAt.Key, ProblemSide.of(was), ProblemSide.of(now), s"the key's fields keep their " +
        s"types and positions under other names ($what): Spark compares keys by type and position and would read " +
        "every old key as the new one, so statesnap takes it for another key", "stop the query and give every " +
        s"entry its new key, ${SchemaProblem.ChangeKey}$each" + " (docs/tools.md, \"Change a key\"); or keep the " +
        "key's columns as they were", rekey = Some(ChangeKeyFix(keys))))
    }
  }

  /** The columns of the key that places a record's entries: a map state's grouping key's, else its whole key's. */
  def groupingColumns(record: StateSnapshotRecord): StructType = placing(record) match {
    case wrapped if record.kind == StateKind.Map && wrapped.fieldNames.sameElements(Array("key")) =>
      wrapped("key").dataType match {
        case columns: StructType => columns
        case _ => wrapped
      }
    case key => key
  }

  private def placing(record: StateSnapshotRecord): StructType = {
    val key = StateDecision.schemaOf(record.keySnapshot)
    if (record.kind == StateKind.Map) MapStateKey.parts(key).fold(key)(_._1) else key
  }
}
