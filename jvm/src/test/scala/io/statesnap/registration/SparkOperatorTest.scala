package io.statesnap.registration

import org.junit.Assert._
import org.junit.Test

class SparkOperatorTest {
  private val join = SparkOperator.StreamStreamJoin

  /**
   * A join's stores as Spark 3.5 to 4.3 name them, in the order their ids sit in a commit of checkpoint format v2
   * (`SymmetricHashJoinStateManager.allStateStoreNames`): the one list every reader of a join's stores asks.
   */
  @Test def aJoinKeepsFourStoresInSparksOrder(): Unit = {
    assertEquals(Seq("left-keyToNumValues", "left-keyWithIndexToValue", "right-keyToNumValues",
      "right-keyWithIndexToValue"), join.stores)
    assertEquals(Seq(false, true, false, true), join.stores.map(join.keepsRows))
    assertEquals(Seq(true, false, true, false), join.stores.map(join.keepsCounts))
    Seq("default", "left-keyToNumValue", "left-keyWithIndexToValue-x", "middle-keyToNumValues").foreach { name =>
      assertFalse(name, join.isStore(name) || join.keepsRows(name) || join.keepsCounts(name))
    }
  }
}
