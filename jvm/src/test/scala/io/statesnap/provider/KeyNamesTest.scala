package io.statesnap.provider

import io.statesnap.snapshot.StateKind
import org.apache.spark.sql.types.StructType
import org.junit.Assert._
import org.junit.Test

class KeyNamesTest {
  private def state(key: String, name: String = "default") =
    GuardedState.record(name, StructType.fromDDL(key), StructType.fromDDL("n bigint"), 1)

  private def renamed(from: String, to: String, name: String = "default") =
    KeyNames.renamed(state(from, name), state(to, name))

  @Test def aKeyFedByAnotherColumnOfTheSameTypeIsAnotherKey(): Unit = {
    val problems = renamed("user string", "region string")
    assertEquals(1, problems.size)
    assertTrue(problems.head.reason, problems.head.reason.contains("`user` is now `region`"))
    assertTrue(problems.head.describe, problems.head.describe.contains("keys={'region': 'user'}"))
  }

  @Test def reorderedColumnsAreAnotherKeyThatAKeyChangeMakesWithNoValue(): Unit = {
    val problems = renamed("user string, region string", "region string, user string")
    assertTrue(problems.head.reason, problems.head.reason.contains("reordered, (user, region) -> (region, user)"))
    assertFalse(problems.head.describe, problems.head.describe.contains("keys="))
  }

  @Test def theFixValuesOnlyTheFieldsTheKeyGains(): Unit = {
    // `a` and `b` swap places (by name, kept: a value given for them would make old keys meet), `c` is now `d`.
    val problems = renamed("a string, b string, c string", "b string, a string, d string")
    assertTrue(problems.head.describe, problems.head.describe.contains("keys={'d': 'c'}"))
    // Reordered with their types (Spark's check passes it): by name, `b` is kept but narrowed, so it is cast.
    val swapped = renamed("a int, b bigint", "b int, a bigint")
    assertTrue(swapped.head.describe, swapped.head.describe.contains("keys={'b': 'CAST(b AS INT)'}"))
  }

  @Test def theSameNamesOrAnotherLayoutAreNotItsToSay(): Unit = {
    assertTrue(renamed("user string", "user string").isEmpty)
    assertTrue("nullability alone", renamed("user string NOT NULL", "user string").isEmpty)
    assertTrue("another layout: Spark's comparison refuses it", renamed("user string", "region int").isEmpty)
    assertTrue("a join's stores", renamed("a string", "b string", "left-keyToNumValues").isEmpty)
  }

  @Test def aMapStatesUserKeyEvolvesByItsOwnRules(): Unit = {
    def map(userKey: String) = GuardedState.record("m", StructType.fromDDL(s"key struct<id: string>, " +
      s"userKey struct<$userKey>"), StructType.fromDDL("n bigint"), 1).copy(kind = StateKind.Map)
    assertTrue(KeyNames.renamed(map("k string"), map("device string")).isEmpty)
    val grouping = GuardedState.record("m", StructType.fromDDL("key struct<uid: string>, userKey struct<k: string>"),
      StructType.fromDDL("n bigint"), 1).copy(kind = StateKind.Map)
    assertEquals(1, KeyNames.renamed(map("k string"), grouping).size)
  }
}
