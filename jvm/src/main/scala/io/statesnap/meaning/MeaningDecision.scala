package io.statesnap.meaning

import io.statesnap.{StatesnapErrors, StatesnapException}
import io.statesnap.evolution.FixFormat
import org.apache.hadoop.conf.Configuration
import org.json4s._

/**
 * What the plan of a query being started says of an operator's state, decided against the meaning recorded with it
 * before any task ([[MeaningDecision.decide]]), and handed to the operator's stores in the query's conf: the meaning
 * to record with the first version the batch commits (`record`), whether the key is the recorded one under other
 * names (`sameKey`: the stores then read it under the new ones), and how an aggregation's buffers follow its
 * aggregates (`buffers`). It holds for the version the batch loads (`atVersion`) only: later batches load versions
 * recorded under it.
 */
final case class PlannedOperator(atVersion: Long, meaning: OperatorMeaning, record: Boolean, sameKey: Boolean,
    buffers: Option[AggregateMatch]) {
  def toJValue: JValue = JObject(
    "atVersion" -> JInt(atVersion),
    "meaning" -> meaning.toJValue,
    "record" -> JBool(record),
    "sameKey" -> JBool(sameKey),
    "buffers" -> buffers.fold[JValue](JNull)(b => JObject(
      "previous" -> OperatorMeaning("", Nil, b.previous).toJValue,
      "kept" -> JArray(b.kept.toList.map(k => JInt(BigInt(k.getOrElse(-1))))))))
}

object PlannedOperator {
  def fromJValue(value: JValue): PlannedOperator = {
    val fields = value match {
      case JObject(f) => f.toMap
      case other => throw StatesnapErrors.internal(s"a planned operator is an object, not $other")
    }
    val meaning = OperatorMeaning.fromJValue(fields("meaning"))
    PlannedOperator(
      fields.get("atVersion").collect { case JInt(v) => v.toLong }.getOrElse(-1L),
      meaning,
      fields.get("record").contains(JBool(true)),
      fields.get("sameKey").contains(JBool(true)),
      fields.get("buffers").collect { case JObject(b) =>
        val buffers = b.toMap[String, JValue]
        val previous = OperatorMeaning.fromJValue(buffers("previous")).aggregates
        AggregateMatch(previous, meaning.aggregates, buffers("kept") match {
          case JArray(items) => items.collect { case JInt(k) => Some(k.toInt).filter(_ >= 0) }
          case other => throw StatesnapErrors.internal(s"kept is $other")
        })
      })
  }
}

object MeaningDecision {
  /**
   * Decides the state of operator `operatorId` under `stateRoot`, which the planned query means as `now`, as its
   * stores load `version`: [[judge]] of the meaning recorded for that version.
   */
  def decide(stateRoot: String, operatorId: Long, version: Long, now: OperatorMeaning, hadoopConf: Configuration,
      describe: String, checkpoint: String): Either[StatesnapException, PlannedOperator] =
    judge(RecordedMeanings.inForce(stateRoot, operatorId, version, hadoopConf).map(_._2), now, operatorId, version,
      describe, checkpoint)

  /**
   * The meaning clause of an operator's decision: its state, which the planned query means as `now`, recorded as
   * meaning `recorded` (None: nothing recorded) at operator `operatorId` as its stores load `version`.
   * @param describe the operator, as the refusal names it
   * @param checkpoint the query's checkpoint, in the fix the refusal prints
   * @return what the stores are told; Left the refusal of a key of the same layout now fed by other columns, or by the
   *   same ones in another order (a key of another layout is refused by the stores as Spark's own check refuses it).
   *   An aggregate whose type changes (the same function over the same columns, cast otherwise) is not matched by
   *   function: its buffers are decided by their names as without a recorded meaning, where a start for what is new
   *   can be registered.
   */
  def judge(recorded: Option[OperatorMeaning], now: OperatorMeaning, operatorId: Long, version: Long,
      describe: String, checkpoint: String): Either[StatesnapException, PlannedOperator] = recorded match {
    case None => Right(PlannedOperator(version, now, record = true, sameKey = false, buffers = None))
    case Some(recorded) if recorded.operator != now.operator =>
      // Another operator at this id: Spark's own checks and the stores say so.
      Right(PlannedOperator(version, now, record = true, sameKey = false, buffers = None))
    case Some(recorded) =>
      val sameKey = keyChange(recorded.key, now.key) match {
        case None => Right(true)
        // A key of another layout: Spark's own check and the stores refuse it, naming both keys and change_key.
        case Some(_) if recorded.key.map(_.dataType) != now.key.map(_.dataType) => Right(false)
        case Some(why) => Left(refusal(describe, recorded, now, why, operatorId, checkpoint))
      }
      val buffers = Some(AggregateMatch(recorded.aggregates, now.aggregates)).filterNot(m => m.unchanged ||
        m.retyped.nonEmpty)
      sameKey.map(same => PlannedOperator(version, now, record = recorded != now, sameKey = same, buffers = buffers))
  }

  /**
   * The states the new plan would read at another operator's place: each (id, other) where the state recorded at `id`
   * is the one the planned operator at `other` computes ([[OperatorMatching]]: the same kind, key columns, aggregates
   * and input). Spark finds an operator's state by its place in the plan, and its checks compare names and schemas
   * only: two windowed counts of a union swapped pass them, and each reads the other's counts. An operator whose input
   * alone changed (a filter added) is still itself: only another operator's match moves a state. A meaning recorded
   * without its input (an earlier statesnap) matches none at another place.
   */
  def movedStates(recorded: Map[Long, OperatorMeaning], planned: Map[Long, OperatorMeaning]): Seq[(Long, Long)] =
    OperatorMatching(recorded.map { case (id, m) => id -> Some(m) }, planned.map { case (id, m) => id -> Some(m) })
      .collect { case kept: OperatorMatch.Kept if kept.moved => kept.recorded -> kept.planned }.sortBy(_._1)

  /** The refusal of a restart whose plan reads the states `moved` ([[movedStates]]) at other operators' places. */
  def movedStatesRefusal(checkpoint: String, moved: Seq[(Long, Long)], recorded: Map[Long, OperatorMeaning],
      planned: Map[Long, OperatorMeaning]): StatesnapException = {
    // Key fields by name: what feeds them is the same on both sides, and a window's is a screenful.
    def fed(m: OperatorMeaning) = s"${m.operator} by ${m.key.map(k => s"`${k.name}`").mkString(", ")}" +
      (if (m.aggregates.isEmpty) "" else s", aggregates ${m.aggregates.map(_.function).mkString(", ")}") +
      m.input.filter(_.nonEmpty).fold("")(i => s", fed by $i")
    val each = moved.map { case (id, other) =>
      s"the state of operator $id (${fed(recorded(id))}) is computed by the new version's operator $other, and the " +
        s"new version's operator $id is ${planned.get(id).fold("none")(fed)}"
    }
    MeaningErrors.operatorsMoved(checkpoint, each)
  }

  /** The route away from a restart whose stateful operators are not the checkpoint's, without reading its state. */
  val AsANewQuery: String = MeaningErrors.AsANewQuery

  /**
   * Why the key `now` is not the key `recorded`, if it is not: a field fed by another column, the same columns in
   * another order, a column added or removed. The same columns in the same order are the same key under any names;
   * a type that changes is the layout's to decide, not the meaning's.
   */
  def keyChange(recorded: Seq[KeyColumn], now: Seq[KeyColumn]): Option[String] =
    if (SameKey.columns(recorded, now)) None
    else if (recorded.map(_.source).sorted == now.map(_.source).sorted) Some(s"its columns are reordered, " +
      s"(${recorded.map(_.describe).mkString(", ")}) -> (${now.map(_.describe).mkString(", ")})")
    else if (recorded.size == now.size) Some(recorded.zip(now).collect {
      case (r, n) if r.source != n.source && r.name == n.name =>
        s"`${n.name}` is now fed by ${n.source}, not ${r.source}"
      case (r, n) if r.source != n.source => s"${r.describe} is now ${n.describe}"
    }.mkString(", "))
    else {
      val gone = recorded.filterNot(r => now.exists(_.source == r.source))
      val fedAnew = KeySources(recorded, now).gained
      Some((fedAnew.map(n => s"${n.describe} is fed by a column the recorded key does not have") ++
        gone.map(r => s"${r.describe} no longer is in it").toList).mkString(", ") +
        s" (recorded (${recorded.map(_.describe).mkString(", ")}), now (${now.map(_.describe).mkString(", ")}))")
    }

  private def refusal(describe: String, recorded: OperatorMeaning, now: OperatorMeaning, why: String,
      operatorId: Long, checkpoint: String): StatesnapException = {
    if (recorded.operator.startsWith(PlannedMeaning.StreamStreamJoin))
      return MeaningErrors.anotherJoinKey(describe, why, operatorId)
    val fix = SameKey.changeKeyFix(KeySources(recorded.key, now.key))
    val call = FixFormat.Application(None, Some(checkpoint)).changeKey(fix)
    // A dedup's value says nothing of its rows: a key change only fits columns computed from the old ones.
    val dedup = recorded.operator.startsWith("dropDuplicates")
    MeaningErrors.anotherKey(describe, why, call, derivesKeys = fix.keys.nonEmpty, dedup, operatorId)
  }
}
