package io.statesnap.checkpoint

import io.statesnap.evolution.FixFormat
import io.statesnap.provider.{StateEncoding, StateWalk}
import io.statesnap.snapshot.{OperatorKind, RowSchemaSnapshot, StateKind, StateSnapshotRecord}
import org.apache.spark.sql.types.StructType
import org.junit.Assert._
import org.junit.Test

/**
 * An operator's decision from its states' steps: refused by the first state that refuses (with that state's words,
 * no later state decided), else decided, migrating where a state's entries are rewritten.
 */
class OperatorDecisionTest {
  private def record(name: String, valueDdl: String, keyDdl: String = "k STRING") = StateSnapshotRecord(name,
    StateKind.Value, OperatorKind.TransformWithState, new RowSchemaSnapshot().configure(StructType.fromDDL(keyDdl)),
    new RowSchemaSnapshot().configure(StructType.fromDDL(valueDdl)), 3L, 1L)

  private def step(name: String, was: String, now: String, keyWas: String = "k STRING",
      keyNow: String = "k STRING") = StateWalk.step(Some(record(name, was, keyWas)), Some(record(name, was, keyWas)),
    record(name, now, keyNow), StateEncoding.UnsafeRow, s"state '$name'", FixFormat.CommandLine())

  @Test def aStateThatMigratesMakesTheOperatorMigrateAndOneAsIsDoesNot(): Unit =
    OperatorDecision.of(Iterator(step("kept", "n INT", "n INT"), step("grown", "a INT", "a INT, b INT"))) match {
      case decided: OperatorDecision.Decided =>
        assertEquals(Seq("kept", "grown"), decided.states.map(_.current.stateName))
        assertEquals(Seq("grown"), decided.migrating.map(_.current.stateName))
        assertEquals(None, decided.refusal)
      case other => fail(s"expected decided, got $other")
    }

  @Test def theFirstRefusedStateRefusesTheOperatorInItsWordsAndNoLaterStateIsDecided(): Unit = {
    var later = false
    val narrowed = step("total", "n BIGINT", "n INT")
    val decision = OperatorDecision.of(Iterator(step("kept", "n INT", "n INT"), narrowed) ++
      Iterator.continually { later = true; step("after", "n INT", "n INT") }.take(1))
    assertEquals(OperatorDecision.Refused(narrowed.refusal.get), decision)
    assertTrue(decision.refusal.get.getMessage, decision.refusal.get.getMessage.contains("state 'total'"))
    assertFalse("a state after the refused one is not read", later)
  }

  @Test def aRefusedKeyIsOneAKeyChangeMakesAndARefusedValueIsNot(): Unit = {
    def ofKey(decision: OperatorDecision) = decision match {
      case OperatorDecision.Refused(_, ofKey) => ofKey
      case other => fail(s"expected refused, got $other"); false
    }
    assertTrue("a key of another layout", ofKey(OperatorDecision.of(Iterator(step("n", "n INT", "n INT",
      keyNow = "k STRING, region STRING")))))
    assertTrue("a key under other names", ofKey(OperatorDecision.of(Iterator(step("n", "n INT", "n INT",
      keyWas = "user STRING", keyNow = "region STRING")))))
    assertFalse("a value narrowed", ofKey(OperatorDecision.of(Iterator(step("n", "n BIGINT", "n INT")))))
  }

  @Test def anOperatorWithNoStateToDecideIsDecidedAsIs(): Unit =
    assertEquals(OperatorDecision.Decided(Nil), OperatorDecision.of(Iterator.empty))
}
