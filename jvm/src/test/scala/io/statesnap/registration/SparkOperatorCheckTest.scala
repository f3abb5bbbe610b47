package io.statesnap.registration

import org.junit.Assert._
import org.junit.Test

/** Spark's check of a restart's stateful operators against its operator metadata, as the rehearsal asks it. */
class SparkOperatorCheckTest {
  private val aggregation = Map(0L -> "stateStoreSave")

  @Test def theSameOperatorsAtTheSameIdsPass(): Unit = {
    assertEquals(Nil, SparkOperatorCheck.differing(aggregation, aggregation))
    assertEquals("no metadata (Spark 3.5, no batch): Spark checks nothing", Nil,
      SparkOperatorCheck.differing(Map.empty, Map(0L -> "dedupe", 1L -> "stateStoreSave")))
  }

  @Test def anOperatorAddedRemovedOrMovedIsRefusedAtEveryIdItChanges(): Unit = {
    val added = Map(0L -> "stateStoreSave", 1L -> "dedupe")
    assertEquals("a dedup below the aggregation: Spark numbers top-down", Seq(1L),
      SparkOperatorCheck.differing(aggregation, added))
    assertEquals("a dedup above it moves the aggregation", Seq(0L, 1L),
      SparkOperatorCheck.differing(aggregation, Map(0L -> "dedupe", 1L -> "stateStoreSave")))
    assertEquals("removed", Seq(1L), SparkOperatorCheck.differing(added, aggregation))
    assertEquals("every one removed", Seq(0L), SparkOperatorCheck.differing(aggregation, Map.empty))
  }

  @Test def theRefusalNamesBothListsTheIdsThatDifferAndSparksError(): Unit = {
    val message = SparkOperatorCheck.refusal("file:/ck", aggregation, Map(0L -> "dedupe", 1L -> "stateStoreSave"))
    assertTrue(message, message.startsWith("[STATESNAP_STATEFUL_OPERATORS_CHANGED] the new version's stateful " +
      "operators are not the ones the state of checkpoint file:/ck was written by: operator ids 0 (stateStoreSave -> " +
      "dedupe), 1 (none -> stateStoreSave) differ (the checkpoint's: 0 stateStoreSave; the new version's: 0 dedupe, " +
      "1 stateStoreSave)"))
    assertTrue(message, message.contains("STREAMING_STATEFUL_OPERATOR_NOT_MATCH_IN_STATE_METADATA") &&
      message.contains("Nothing was started or written"))
  }
}
