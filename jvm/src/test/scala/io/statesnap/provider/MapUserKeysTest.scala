package io.statesnap.provider

import io.statesnap.evolution.{FixFormat, Rows, SqlSettings}
import io.statesnap.registration.{MapMerge, QueryRegistrations, QueryScope, Registrations, ScopeRegistrations,
  StateRegistration}
import io.statesnap.snapshot._
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.types.StructType
import org.apache.spark.unsafe.types.UTF8String
import org.junit.Assert._
import org.junit.Test

/**
 * The one decision on a map state whose key, `struct<key, userKey>`, changes: the user key evolves by the definition
 * registered as the map's key, the grouping key never; each refusal names the field and the fix.
 */
class MapUserKeysTest {
  private def mapKey(userKey: String, grouping: String = "id STRING") =
    StructType.fromDDL(s"key STRUCT<$grouping>, userKey STRUCT<$userKey>")

  private def recorded(userKey: String, value: String = "n INT") = StateSnapshotRecord("prefs", StateKind.Map,
    OperatorKind.TransformWithState, new RowSchemaSnapshot().configure(mapKey(userKey)),
    new RowSchemaSnapshot().configure(StructType.fromDDL(value)), 3L, 1L)

  /** What the application declares, with `definition` (RowSnapshot JSON) registered as the map's key. */
  private def declared(key: StructType, definition: Option[String], value: String = "n INT",
      kind: StateKind = StateKind.Map): StateSnapshotRecord = {
    val registered =
      definition.map(json => "prefs" -> (StateRegistration.MapKey(Some(json), None, None): StateRegistration))
    val snapshots = new DeclaredSnapshots(QueryRegistrations("", ScopeRegistrations(registered.toMap), Nil))
    snapshots.record("prefs", kind, OperatorKind.TransformWithState, key,
      snapshots.valueSnapshot("prefs", StructType.fromDDL(value)), 4L)
  }

  private def defaults(rules: String) =
    s"""{"version": 2, "steps": [{"version": 2, "defaults": {$rules}, "renamed": {}, "derived": {}, "dropped": []}]}"""

  private def decide(old: StateSnapshotRecord, current: StateSnapshotRecord) =
    StateDecision.decide(Some(old), current, StateEncoding.UnsafeRow)

  private def refusal(decided: StateDecision): String = decided match {
    case r: StateDecision.Refuse => r.error("state 'prefs'", None, recorded("k STRING"),
      FixFormat.Application(Some("prefs"), Some("/ck"))).getMessage
    case other => fail(s"expected a refusal, got $other"); ""
  }

  @Test def anAddedUserKeyFieldWithItsValueMovesEveryEntryToItsNewKey(): Unit = {
    val key = mapKey("k STRING, device STRING")
    decide(recorded("k STRING"), declared(key, Some(defaults(""""userKey.device": "'web'""""))))  match {
      case StateDecision.Migrate(values, record, Some(keys)) =>
        val old = Rows.stored(mapKey("k STRING"), InternalRow(UTF8String.fromString("id0")),
          InternalRow(UTF8String.fromString("u1")))
        assertEquals("[id0],[u1,web]", render(keys.migrate(old), key))
        assertEquals(key, StateDecision.schemaOf(record.keySnapshot))
        assertEquals(Nil, values.changes)
      case other => fail(s"expected a key migration, got $other")
    }
  }

  @Test def aWidenedUserKeyFieldNeedsNoRegistration(): Unit = decide(recorded("k INT"),
      declared(mapKey("k BIGINT"), None)) match {
    case StateDecision.Migrate(_, _, Some(keys)) =>
      assertEquals("[id0],[7]", render(keys.migrate(Rows.stored(mapKey("k INT"),
        InternalRow(UTF8String.fromString("id0")), InternalRow(7)).copy()), mapKey("k BIGINT")))
    case other => fail(s"expected a key migration, got $other")
  }

  @Test def anAddedUserKeyFieldWithoutAValueIsRefusedNamingTheRegistration(): Unit = {
    val message = refusal(decide(recorded("k STRING"), declared(mapKey("k STRING, device STRING"), None)))
    assertTrue(message, message.contains("field 'userKey.device'") && message.contains("a user key field was added"))
    assertTrue(message, message.contains("statesnap.register_snapshot(spark, 'prefs', map_key=statesnap.RowSnapshot(" +
      "version=1, defaults={'userKey.device': \"'<value>'\"}), checkpoint='/ck')"))
    assertFalse(message, message.contains("aggregate"))
  }

  @Test def aChangedGroupingKeyIsRefusedWhateverIsRegistered(): Unit = {
    val message = refusal(decide(recorded("k STRING"), declared(mapKey("k STRING", "id BIGINT"), None)))
    assertTrue(message, message.contains("keep the grouping key as it was"))
  }

  @Test def aMapWithATtlKeepsItsUserKey(): Unit = {
    val ttl = "value STRUCT<n: INT>, ttlExpirationMs BIGINT"
    val message = refusal(decide(recorded("k STRING", ttl), declared(mapKey("k STRING, device STRING"),
      Some(defaults(""""userKey.device": "'web'"""")), ttl)))
    assertTrue(message, message.contains("the map has a TTL"))
  }

  @Test def aMapKeyRegisteredForAnotherKindOfStateIsRefused(): Unit = {
    val e = assertThrows(classOf[io.statesnap.StatesnapException], () =>
      declared(StructType.fromDDL("id STRING"), Some(defaults("")), kind = StateKind.Value))
    assertTrue(e.getMessage, e.getMessage.contains("only a map state has a user key"))
  }

  @Test def aMapKeyAndAValueSnapshotTravelTogetherThroughTheRegistrationsConf(): Unit = {
    val merge = MapMerge(Map("n" -> "a.n + b.n"), SqlSettings(ansi = false, timeZone = "UTC", caseSensitive = true))
    val both = StateRegistration.withMapKey(Some(StateRegistration.Definition(defaults(""))),
      Some(defaults(""""userKey.device": "'web'"""")), Some(merge))
    val scope = QueryScope.Name("q")
    val all = Map[QueryScope, ScopeRegistrations](scope -> ScopeRegistrations(Map("prefs" -> both.get)))
    val read = Registrations.parse(Some(Registrations.toJson(all)))(scope).states("prefs")
    assertEquals(StateRegistration.valueOf(both).map(normalized), StateRegistration.valueOf(Some(read)).map(normalized))
    assertEquals(StateRegistration.mapKeyOf(both).map(compact), StateRegistration.mapKeyOf(Some(read)).map(compact))
    assertEquals(Some(merge), StateRegistration.mapMergeOf(Some(read)))
    // Unregistering the value keeps the map key, and the other way round.
    assertEquals(StateRegistration.mapKeyOf(both), StateRegistration.mapKeyOf(StateRegistration.withValue(both, None)))
    assertEquals(StateRegistration.valueOf(both), StateRegistration.withMapKey(both, None, None))
  }

  private def compact(json: String) = org.json4s.jackson.JsonMethods.compact(org.json4s.jackson.JsonMethods.parse(json))

  private def normalized(r: StateRegistration) = r match {
    case StateRegistration.Definition(json) => StateRegistration.Definition(compact(json))
    case other => other
  }

  private def render(row: InternalRow, key: StructType): String = key.fields.indices.map { i =>
    val part = key.fields(i).dataType.asInstanceOf[StructType]
    row.getStruct(i, part.length).toSeq(part).mkString("[", ",", "]")
  }.mkString(",")
}
