package io.statesnap.provider

import io.statesnap.StatesnapException
import io.statesnap.evolution.{EvolutionStep, Rules}
import io.statesnap.registration.StateRegistration
import io.statesnap.snapshot._
import io.statesnap.testkit.MigrationFaults
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.execution.streaming.state.StateStoreProvider
import org.apache.spark.sql.types.StructType
import org.apache.spark.unsafe.types.UTF8String
import org.junit.Assert._
import org.junit.Test

/** Version 1 migrates `amount` (euros, double) into `cents` (bigint): a user snapshot class attached by name. */
class CentsSnapshot extends RowSchemaSnapshot {
  override protected def evolutionSteps: Seq[EvolutionStep] =
    Seq(EvolutionStep(1, None, Rules(derived = Map("cents" -> "CAST(amount * 100 AS BIGINT)"), dropped = Set("amount"))))
}

/** Bad input at the provider: every refusal names the state, and the checkpoint stays as it was. */
class ProviderTest {
  private val v1 = StructType.fromDDL("amount DOUBLE")
  private val v2 = StructType.fromDDL("amount DOUBLE, note STRING")
  private val values = Map("a" -> Seq[Any](1.5), "b" -> Seq[Any](-2.0))

  /** A checkpoint with version 1 written by statesnap under v1. */
  private def written(): ProviderFixture = {
    val f = new ProviderFixture
    assertEquals(1L, f.commitState(f.statesnap(), 0, "orders", v1, values))
    f
  }

  /** Version 2 = version 1 with the snapshot record of `orders` replaced by `record`, written behind statesnap. */
  private def withRecord(f: ProviderFixture, record: Array[Byte]): Unit = {
    val provider = f.sparkRocksDb()
    val store = provider.getStore(1, None)
    store.createColFamilyIfAbsent(RecordFamily.Name, RecordFamily.KeySchema, RecordFamily.ValueSchema,
      org.apache.spark.sql.execution.streaming.state.NoPrefixKeyStateEncoderSpec(RecordFamily.KeySchema),
      isInternal = true)
    store.put(f.row(RecordFamily.KeySchema, UTF8String.fromString("orders")),
      f.row(RecordFamily.ValueSchema, record), RecordFamily.Name)
    assertEquals(2L, store.commit())
    provider.close()
  }

  private def recordWithValueSnapshot(valueSnapshotBytes: Array[Byte]): Array[Byte] =
    Checksummed.write(StateSnapshotRecord.Magic, StateSnapshotRecord.FormatVersion) { out =>
      out.writeUTF("orders"); out.writeUTF("value"); out.writeUTF("transformWithState"); out.writeLong(1)
      out.writeLong(0)
      val key = SnapshotFormat.write(new RowSchemaSnapshot().configure(StructType.fromDDL("id STRING")))
      Seq(key, valueSnapshotBytes).foreach { b => out.writeInt(b.length); out.write(b) }
      out.writeInt(0)
    }

  /** Opening the state under v2 fails with `errorClass`; version 2 still reads the v1 values. */
  private def assertRefused(f: ProviderFixture, version: Long, errorClass: String, expected: String*): Unit = {
    val provider = f.statesnap()
    val store = provider.getStore(version, None)
    val e = assertThrows(classOf[StatesnapException], () => f.open(store, "orders", v2))
    store.abort()
    provider.close()
    assertEquals(errorClass, e.errorClass)
    (expected :+ "state 'orders' (operator 0, partition 0").foreach { s =>
      assertTrue(s"'${e.getMessage}' should mention '$s'", e.getMessage.contains(s))
    }
    assertEquals(values, f.readWithSpark(version, "orders", v1))
  }

  @Test def migrationRewritesEveryEntryAndRecordsTheNewSnapshot(): Unit = {
    val f = written()
    assertEquals((2L, 2L), f.restart(1, "orders", v2))
    assertEquals(Map("a" -> Seq(1.5, null), "b" -> Seq(-2.0, null)), f.readWithSpark(2, "orders", v2))
    assertEquals((3L, 0L), f.restart(2, "orders", v2))
  }

  @Test def corruptRecordBytesAreRefused(): Unit = {
    val f = written()
    val good = recordWithValueSnapshot(SnapshotFormat.write(new RowSchemaSnapshot().configure(v1)))
    good(good.length - 10) = (good(good.length - 10) ^ 1).toByte
    withRecord(f, good)
    assertRefused(f, 2, StatesnapException.UnreadableSnapshot, "checksum does not match", "Nothing was read or rewritten")
  }

  @Test def unknownSnapshotClassIsRefused(): Unit = {
    val f = written()
    withRecord(f, recordWithValueSnapshot(Checksummed.write(SnapshotFormat.Magic, 1) { out =>
      out.writeUTF("com.example.RetiredSnapshot"); out.writeInt(1); out.writeInt(0)
    }))
    assertRefused(f, 2, StatesnapException.UnreadableSnapshot, "com.example.RetiredSnapshot is not on the classpath")
  }

  @Test def newerSnapshotVersionIsRefused(): Unit = {
    val f = written()
    val payload = Checksummed.bytesOf(new RowSchemaSnapshot().configure(v1).writeSnapshot)
    withRecord(f, recordWithValueSnapshot(Checksummed.write(SnapshotFormat.Magic, 1) { out =>
      out.writeUTF(classOf[RowSchemaSnapshot].getName); out.writeInt(7); out.writeInt(payload.length)
      out.write(payload)
    }))
    assertRefused(f, 2, StatesnapException.UnreadableSnapshot, "written by a newer statesnap", "version 7")
  }

  @Test def snapshotClassWithoutNullaryConstructorIsRefused(): Unit = {
    val f = written()
    withRecord(f, recordWithValueSnapshot(SnapshotFormat.write(
      new io.statesnap.snapshot.NoDefaultConstructorSnapshot(v1))))
    assertRefused(f, 2, StatesnapException.UnreadableSnapshot, "no public no-argument constructor")
  }

  @Test def stateWithEntriesButNoSnapshotIsRefused(): Unit = {
    val f = new ProviderFixture
    f.commitState(f.sparkRocksDb(), 0, "orders", v1, values)
    // The fixture writes no Spark schema files either (a streaming query's driver would).
    assertRefused(f, 1, StatesnapException.MissingSnapshot, "holds entries but neither a statesnap snapshot nor " +
      "Spark's own schema files")
  }

  @Test def narrowingIsRefusedBeforeAnyWrite(): Unit = {
    val f = written()
    val provider = f.statesnap()
    val store = provider.getStore(1, None)
    val e = assertThrows(classOf[StatesnapException],
      () => f.open(store, "orders", StructType.fromDDL("amount FLOAT")))
    store.abort(); provider.close()
    assertEquals(StatesnapException.IncompatibleStateSchema, e.errorClass)
    assertTrue(e.getMessage, e.getMessage.contains("field 'amount': double -> float: narrowing could lose values"))
    assertEquals(values, f.readWithSpark(1, "orders", v1))
  }

  @Test def kindChangeIsRefused(): Unit = {
    val f = written()
    val provider = f.statesnap()
    val store = provider.getStore(1, None)
    val e = assertThrows(classOf[StatesnapException], () => store.createColFamilyIfAbsent("orders", f.keySchema, v1,
      org.apache.spark.sql.execution.streaming.state.NoPrefixKeyStateEncoderSpec(f.keySchema),
      useMultipleValuesPerKey = true))
    store.abort(); provider.close()
    assertEquals(StatesnapException.StateKindChanged, e.errorClass)
    assertTrue(e.getMessage, e.getMessage.contains("was written as value state and is now declared as list state"))
  }

  @Test def attachedSnapshotClassDrivesTheMigration(): Unit = {
    val f = written()
    val cents = StructType.fromDDL("cents BIGINT")
    assertEquals((2L, 2L), f.restart(1, "orders", cents,
      f.registered("orders" -> StateRegistration.SnapshotClass(classOf[CentsSnapshot].getName))))
    assertEquals(Map("a" -> Seq(150L), "b" -> Seq(-200L)), f.readWithSpark(2, "orders", cents))
  }

  @Test def attachedClassThatIsNoRowSnapshotIsRefused(): Unit = {
    val f = written()
    val provider = f.statesnap(f.registered("orders" -> StateRegistration.SnapshotClass("java.lang.String")))
    val store = provider.getStore(1, None)
    val e = assertThrows(classOf[StatesnapException], () => f.open(store, "orders", v2))
    store.abort(); provider.close()
    assertEquals(StatesnapException.InvalidSnapshotDefinition, e.errorClass)
    assertTrue(e.getMessage, e.getMessage.contains("java.lang.String attached to state 'orders'"))
  }

  @Test def relaxedNullabilityRecordsTheSnapshotWithoutRewriting(): Unit = {
    val f = new ProviderFixture
    val strict = StructType.fromDDL("amount DOUBLE NOT NULL")
    f.commitState(f.statesnap(), 0, "orders", strict, values)
    assertEquals((2L, 0L), f.restart(1, "orders", v1))
    val inspect = f.sparkRocksDb()
    val view = inspect.getStore(2, None)
    val record = new SnapshotCatalog(view, identity).records("orders").inForce(2).get
    view.abort(); inspect.close()
    assertEquals(new RowSchemaSnapshot().configure(v1), record.valueSnapshot)
    assertEquals(Seq(1L), record.history.map(_.recordedAtVersion))
  }

  @Test def aStoreWhoseMigrationFailedNeverCommits(): Unit = {
    val f = new ProviderFixture
    val many = (0 until 50).map(i => s"k$i" -> Seq[Any](i.toDouble)).toMap
    assertEquals(1L, f.commitState(f.statesnap(), 0, "orders", v1, many))
    // The migration stops after writing 10 of 50 entries; the application swallows the error and carries on.
    val provider = f.statesnap(MigrationProbe.ClassConf -> classOf[MigrationFaults].getName,
      MigrationFaults.AfterConf -> "10")
    val store = provider.getStore(1, None)
    assertThrows(classOf[IllegalStateException], () => f.open(store, "orders", v2))
    val refused = assertThrows(classOf[StatesnapException], () => store.commit())
    provider.close()
    assertEquals(StatesnapException.MigrationFailed, refused.errorClass)
    assertTrue(refused.getMessage, refused.getMessage.contains("refuses to commit version 2"))
    assertEquals(many, f.readWithSpark(1, "orders", v1))
    assertFalse("no version 2 was written", new java.io.File(f.checkpoint, "0/0/2.zip").exists() ||
      new java.io.File(f.checkpoint, "0/0/2.changelog").exists())
  }

  @Test def columnFamiliesOfAStoreThatIsNotTransformWithStateAreGuardedAsSparkComparesThem(): Unit = {
    val f = new ProviderFixture(transformWithState = false)
    val counts = StructType.fromDDL("value BIGINT")
    val provider = f.statesnap()
    val store = provider.getStore(0, None)
    // A stream-stream join of state format 3: an internal family (no `$`) and the rows family.
    store.createColFamilyIfAbsent("left-keyToNumValues", f.keySchema, counts,
      org.apache.spark.sql.execution.streaming.state.NoPrefixKeyStateEncoderSpec(f.keySchema), isInternal = true)
    f.open(store, "left-keyWithIndexToValue", v1)
    store.put(f.key("a"), f.row(counts, 1L), "left-keyToNumValues")
    store.put(f.key("a"), f.row(v1, 2.5), "left-keyWithIndexToValue")
    assertEquals(1L, store.commit())
    provider.close()
    // Names may change, as Spark's own check allows; the layout may not, internal families included.
    assertEquals((2L, 0L), f.restart(1, "left-keyWithIndexToValue", StructType.fromDDL("price DOUBLE")))
    for ((family, changed) <- Seq("left-keyWithIndexToValue" -> v2, "left-keyToNumValues" -> StructType.fromDDL("value INT"))) {
      val again = f.statesnap()
      val s = again.getStore(2, None)
      val e = assertThrows(classOf[StatesnapException], () => f.open(s, family, changed))
      s.abort(); again.close()
      assertEquals(StatesnapException.IncompatibleStateSchema, e.errorClass)
      assertTrue(e.getMessage, e.getMessage.contains(s"column family '$family'") &&
        e.getMessage.contains("Spark's own state schema check refuses") && e.getMessage.contains("Nothing was read"))
    }
    assertEquals(Map("a" -> Seq(2.5)), f.readWithSpark(2, "left-keyWithIndexToValue", v1))
  }
}
