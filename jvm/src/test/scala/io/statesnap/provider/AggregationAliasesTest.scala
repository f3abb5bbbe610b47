package io.statesnap.provider

import io.statesnap.StatesnapException
import io.statesnap.evolution.{AggregateStart, EvolutionStep, Rules, SqlSettings}
import io.statesnap.registration.{QueryRegistrations, ScopeRegistrations, StateRegistration}
import io.statesnap.snapshot.{DeclarativeRowSnapshot, SnapshotDefinition}
import org.apache.spark.sql.types.StructType
import org.junit.Assert._
import org.junit.Test

/**
 * A registration for a streaming aggregation's buffers may name an aggregate by its alias in the planned query: it
 * means the buffer field of an aggregate that keeps one; the alias of one that keeps several, or a field named twice,
 * is refused, naming them.
 */
class AggregationAliasesTest {
  private val buffers = StructType.fromDDL("max BIGINT, count BIGINT NOT NULL, sum DOUBLE, count_1 BIGINT")
  private val planned = Seq(AggregateStart("max(value)", Seq("max" -> "CAST(NULL AS BIGINT)"), Seq("highest")),
    AggregateStart("count(1)", Seq("count" -> "0L"), Seq("n")),
    AggregateStart("avg(value)", Seq("sum" -> "0.0D", "count_1" -> "0L"), Seq("mean")))

  private def declared(defaults: Map[String, String]): DeclaredSnapshots = {
    val definition = SnapshotDefinition(2, Seq(EvolutionStep(2, None, Rules(defaults = defaults))), None,
      SqlSettings.Default)
    new DeclaredSnapshots(QueryRegistrations("file:/ck", ScopeRegistrations(Map("aggregation" ->
      StateRegistration.Definition(definition.toJson))), Nil))
  }

  private def rules(defaults: Map[String, String]): Rules = declared(defaults)
    .aggregationSnapshot("aggregation", buffers, planned).asInstanceOf[DeclarativeRowSnapshot]
    .snapshotDefinition.steps.last.rules

  @Test def anAliasMeansItsAggregatesOneBufferField(): Unit =
    assertEquals(Map("count" -> "100", "max" -> "7"), rules(Map("n" -> "100", "max" -> "7")).defaults)

  @Test def theAliasOfAnAggregateWithSeveralBufferFieldsIsRefusedNamingThem(): Unit = {
    val e = assertThrows(classOf[StatesnapException], () => rules(Map("mean" -> "0")))
    assertTrue(e.getMessage, e.getMessage.contains("'mean' is aggregate `avg(value)`, which keeps several buffer " +
      "fields (sum, count_1): name them instead"))
  }

  @Test def aFieldNamedByItsAliasAndItsNameIsRefused(): Unit = {
    val e = assertThrows(classOf[StatesnapException], () => rules(Map("highest" -> "1", "max" -> "2")))
    assertTrue(e.getMessage, e.getMessage.contains("rules for 'highest' and 'max', which are all buffer field 'max'"))
  }

  @Test def withoutAPlanTheRulesAreAsRegistered(): Unit = assertEquals(Map("n" -> "100"), declared(Map("n" -> "100"))
    .aggregationSnapshot("aggregation", buffers, Nil).asInstanceOf[DeclarativeRowSnapshot]
    .snapshotDefinition.steps.last.rules.defaults)
}
