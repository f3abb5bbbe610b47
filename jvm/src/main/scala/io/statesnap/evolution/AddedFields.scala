package io.statesnap.evolution

/**
 * What a field added to a state's schema reads for the entries written before it, where no rule gives it a value.
 * Each kind of state answers differently: a value field may read null; an aggregate's buffer field may not (null
 * starts some aggregates and not others), nor a map's user key field (a key field that reads null makes the old
 * entries meet). Each refusal names the fix for its kind.
 */
sealed trait AddedFields

object AddedFields {
  /** Null, where it is nullable (the state's values). */
  case object MayReadNull extends AddedFields
  /** Refused without a value: a streaming aggregation's buffer, whose fix is the aggregate's starting value. */
  case object AggregateBuffers extends AddedFields
  /** Refused without a value: a map state's user key, whose fix is registered as the map's key (`map_key=`). */
  final case class MapUserKey(state: String) extends AddedFields
}
