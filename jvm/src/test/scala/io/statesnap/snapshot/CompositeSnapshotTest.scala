package io.statesnap.snapshot

import io.statesnap.evolution.SchemaCompatibility._
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.types.StructType
import org.junit.Assert._
import org.junit.Test

/** A fixed-layout serializer's snapshot, as users write them with the Simple helper. */
class FixedBlobSnapshot extends SimpleStateSerializerSnapshot(() => UnsafeRowSerializer(StructType.fromDDL("b BINARY")))

class OtherBlobSnapshot extends SimpleStateSerializerSnapshot(() => UnsafeRowSerializer(StructType.fromDDL("b BINARY")))

class CompositeSnapshotTest {
  private def row(ddl: String, version: Int = 0) = new RowSchemaSnapshot().configure(StructType.fromDDL(ddl), version)

  private def ttl(ddl: String) = new TtlValueSnapshot(row(ddl))

  @Test def ttlWrapperRoundTripsWithItsNestedSnapshot(): Unit = {
    val snapshot = ttl("count INT, note STRING")
    assertEquals(snapshot, SnapshotFormat.read(SnapshotFormat.write(snapshot)))
    assertEquals(StructType.fromDDL("value STRUCT<count: INT, note: STRING> NOT NULL, ttlExpirationMs BIGINT"),
      snapshot.restoreSerializer().schema)
    assertEquals(Some(StructType.fromDDL("count INT, note STRING")),
      TtlValueSnapshot.unwrap(snapshot.restoreSerializer().schema))
  }

  @Test def ttlValueMigratesAndKeepsItsExpiry(): Unit = {
    val old = ttl("count INT")
    val migration = ttl("count BIGINT, note STRING").resolveSchemaCompatibility(old) match {
      case CompatibleAfterMigration(m) => m
      case other => fail(s"expected a migration, got $other"); null
    }
    val stored = UnsafeProjection.create(old.restoreSerializer().schema)(InternalRow(InternalRow(-7), 1700000000123L))
      .copy()
    val oldRow = new UnsafeRow(migration.oldFieldCount)
    oldRow.pointTo(stored.getBaseObject, stored.getBaseOffset, stored.getSizeInBytes)
    val migrated = migration.migrate(oldRow)
    assertEquals(-7L, migrated.getStruct(0, 2).getLong(0))
    assertTrue(migrated.getStruct(0, 2).isNullAt(1))
    assertEquals(1700000000123L, migrated.getLong(1))
    assertTrue(migration.changes.head, migration.changes.head.startsWith("value: "))
  }

  private def groupState(ddl: String, timeout: Boolean, version: Int = 0) =
    new GroupStateSnapshot(row(ddl, version), timeout)

  @Test def groupStateRoundTripsAndIsSparksLayout(): Unit = {
    Seq(false, true).foreach { timeout =>
      val snapshot = groupState("total BIGINT", timeout)
      assertEquals(snapshot, SnapshotFormat.read(SnapshotFormat.write(snapshot)))
      val layout = snapshot.restoreSerializer().schema
      assertEquals(Some((StructType.fromDDL("total BIGINT"), timeout)), GroupStateSnapshot.unwrap(layout))
      assertEquals(if (timeout) Seq("groupState", "timeoutTimestamp") else Seq("groupState"), layout.fieldNames.toSeq)
    }
    assertNotEquals(groupState("a INT", timeout = true), groupState("a INT", timeout = false))
  }

  @Test def groupStateMigratesItsStateKeepsItsTimeoutAndANullState(): Unit = {
    val old = groupState("count INT", timeout = true)
    val migration = groupState("count BIGINT, note STRING", timeout = true).resolveSchemaCompatibility(old) match {
      case CompatibleAfterMigration(m) => m
      case other => fail(s"expected a migration, got $other"); null
    }
    def stored(state: InternalRow) = {
      val bytes = UnsafeProjection.create(old.restoreSerializer().schema)(InternalRow(state, 1700000000123L)).copy()
      val oldRow = new UnsafeRow(migration.oldFieldCount)
      oldRow.pointTo(bytes.getBaseObject, bytes.getBaseOffset, bytes.getSizeInBytes)
      oldRow
    }
    val migrated = migration.migrate(stored(InternalRow(-7))).copy()
    assertEquals(-7L, migrated.getStruct(0, 2).getLong(0))
    assertTrue(migrated.getStruct(0, 2).isNullAt(1))
    assertEquals(1700000000123L, migrated.getLong(1))
    // Spark keeps a timeout for a key whose state was removed: the state stays null, the timeout stays.
    val noState = migration.migrate(stored(null))
    assertTrue(noState.isNullAt(0))
    assertEquals(1700000000123L, noState.getLong(1))
    assertEquals(Seq("groupState: convert 'count' int -> bigint",
      "groupState: add 'note' string (existing entries read null)"), migration.changes)
  }

  @Test def changingTheTimeoutConfigurationIsRefused(): Unit = {
    val refused = groupState("a INT", timeout = true).resolveSchemaCompatibility(groupState("a INT", timeout = false))
    assertTrue(refused.toString, refused.asInstanceOf[Incompatible].problems.head.describe.contains("GroupStateTimeout"))
  }

  @Test def compositeCombinesNestedOutcomes(): Unit = {
    assertEquals(CompatibleAsIs, ttl("a INT").resolveSchemaCompatibility(ttl("a INT")))
    assertTrue(ttl("a INT").resolveSchemaCompatibility(ttl("a INT NOT NULL"))
       == CompatibleWithReconfiguredSerializer)
    assertTrue(ttl("a INT").resolveSchemaCompatibility(ttl("a BIGINT")).isInstanceOf[Incompatible])
  }

  @Test def turningTtlOnOrOffIsRefused(): Unit = {
    assertTrue(ttl("a INT").resolveSchemaCompatibility(row("a INT")).isInstanceOf[Incompatible])
    val off = row("a INT").resolveSchemaCompatibility(ttl("a INT"))
    assertTrue(off.toString, off.asInstanceOf[Incompatible].problems.head.reason.contains("TTL was turned on or off"))
  }

  @Test def simpleSnapshotIsCompatibleOnlyWithItsOwnClass(): Unit = {
    assertEquals(CompatibleAsIs, new FixedBlobSnapshot().resolveSchemaCompatibility(
      SnapshotFormat.read(SnapshotFormat.write(new FixedBlobSnapshot))))
    assertTrue(new FixedBlobSnapshot().resolveSchemaCompatibility(new OtherBlobSnapshot).isInstanceOf[Incompatible])
  }

  @Test def olderApplicationVersionIsRefusedWhenItWouldDropValues(): Unit = {
    val writtenByV3 = row("a BIGINT, b STRING", version = 3)
    val v2 = row("a BIGINT", version = 2).resolveSchemaCompatibility(writtenByV3)
    assertTrue(v2.toString, v2.asInstanceOf[Incompatible].problems.exists(_.reason.contains("version 2 is older")))
    assertEquals(CompatibleAsIs, row("a BIGINT, b STRING", version = 2).resolveSchemaCompatibility(writtenByV3))
  }

  @Test def declarativeSnapshotRoundTripsWithItsDefinition(): Unit = {
    import io.statesnap.evolution.{CompatibilityMode, EvolutionStep, Rules, SqlSetting, SqlSettings}
    val definition = SnapshotDefinition(3, Seq(
      EvolutionStep(2, Some(StructType.fromDDL("x BIGINT")), Rules(renamed = Map("x" -> "y"))),
      EvolutionStep(3, None, Rules(defaults = Map("c" -> "'EUR'"), derived = Map("d" -> "x * 2"), dropped = Set("e")))),
      Some(CompatibilityMode.Full), SqlSettings(ansi = false, "Europe/Vienna", caseSensitive = true))
    val snapshot = definition.snapshotFor(StructType.fromDDL("a BIGINT"))
    val restored = SnapshotFormat.read(SnapshotFormat.write(snapshot))
    assertEquals(snapshot, restored)
    assertEquals(3, restored.asInstanceOf[RowSchemaSnapshot].userVersion)
    assertEquals(Some(CompatibilityMode.Full), restored.declaredCompatibility)
    assertEquals(definition, SnapshotDefinition.parse("s", definition.toJson))
    // An offline tool's definition says which settings it only assumed, so they are never taken for known.
    val partlyKnown = definition.copy(sql = SqlSettings.Unknown.withValue(SqlSetting.TimeZone, "Asia/Tokyo"))
    assertEquals(Set(SqlSetting.Ansi, SqlSetting.CaseSensitive),
      SnapshotDefinition.parse("s", partlyKnown.toJson).sql.assumed)
    assertEquals(SqlSettings.Unknown, SnapshotDefinition.parse("s", """{"version": 1, "steps": []}""").sql)
  }

  @Test def declarativePayloadVersionOneIsStillRead(): Unit = {
    // Written by statesnap 0.1: the RowSchemaSnapshot payload, then three rule maps.
    val payload = Checksummed.bytesOf { out =>
      new RowSchemaSnapshot().configure(StructType.fromDDL("a BIGINT"), 2).writeSnapshot(out)
      out.writeInt(1); out.writeUTF("a"); out.writeUTF("x")
      out.writeInt(0); out.writeInt(0)
    }
    val bytes = Checksummed.write(SnapshotFormat.Magic, 1) { out =>
      out.writeUTF(classOf[DeclarativeRowSnapshot].getName); out.writeInt(1); out.writeInt(payload.length)
      out.write(payload)
    }
    val restored = SnapshotFormat.read(bytes).asInstanceOf[DeclarativeRowSnapshot]
    assertEquals((2, Map("a" -> "x")), (restored.userVersion, restored.snapshotDefinition.steps.head.rules.renamed))
  }

  @Test def sparksTtlWrapperIsKeptAsSparkRecordedIt(): Unit = {
    // Spark 4.3 declares the wrapper's `value` nullable, 4.1 (and TtlValueSnapshot.wrap) not: the same bytes.
    val recorded = StructType.fromDDL("value STRUCT<n: INT>, ttlExpirationMs BIGINT")
    val declared = TtlValueSnapshot.wrap(StructType.fromDDL("n BIGINT"))
    val written = TtlValueSnapshot.inWrapperOf(recorded, declared)
    assertEquals(StructType.fromDDL("value STRUCT<n: BIGINT>, ttlExpirationMs BIGINT"), written)
    // A declared value that is no TTL layout is left as it is, never wrapped.
    assertEquals(StructType.fromDDL("n BIGINT"), TtlValueSnapshot.inWrapperOf(recorded, StructType.fromDDL("n BIGINT")))
  }
}
