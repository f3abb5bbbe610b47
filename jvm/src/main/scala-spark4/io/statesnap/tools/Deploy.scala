package io.statesnap.tools

import io.statesnap.SparkClasses
import io.statesnap.bridge.CompatibilityCheck
import io.statesnap.keys.NewQueryOperators
import io.statesnap.provider.{StateDecision, StateEncoding}
import io.statesnap.registration.StateRegistration

import OfflineMigration.{describe, migrateStates, Decided}

/** The offline step of `statesnap.deploy` on Spark 4.2+ ([[Rehearsal]] decides whether it runs). */
object Deploy {
  /**
   * The offline step of a deploy (`statesnap.deploy`, Spark 4.2+): migrates the states of `query`'s transformWithState
   * operator, the new version's streaming DataFrame, that the restart would meet in another layout, each declared as
   * the driver's decision declares it ([[PlannedOperatorDecision.transformWithState]]: the plan's schemas and the
   * session's registrations for the query on `location`, or named `name`), in one appended batch as [[Migrate]] does.
   * Nothing is written when no state migrates; a refusal is the rehearsal's, raised before anything is written.
   */
  def run(spark: SparkClasses.SparkSession, location: String, query: SparkClasses.Dataset[_], name: String,
      fileSink: String, noFileSink: Boolean): ToolReport = {
    val (qualified, registered) = Rehearsal.registrations(spark, location, name)
    registered.requireValid()
    val hadoopConf = spark.sessionState.newHadoopConf()
    val version = CheckpointReader.storesAtLatestCommit(qualified, hadoopConf).headOption.map(_.store.version)
    val migrating = version.toSeq.flatMap { v =>
      NewQueryOperators.writers(NewQueryOperators.plan(query)).zipWithIndex.flatMap { case (writer, id) =>
        PlannedOperatorDecision.transformWithState(writer, qualified, id, registered, hadoopConf, v).toSeq.flatten
      }
    }.filter(_.decision.isInstanceOf[StateDecision.Migrate])
    if (migrating.isEmpty) ToolReport(Seq("no transformWithState state needs an offline migration"),
      ToolReport.Nothing)
    else migrateStates(spark, qualified, migrating.map(_.variable.name), fileSink, noFileSink, dryRun = false) {
      (_, target) => target.states.map { t =>
        val d = migrating.find(_.variable.name == t.name).get
        val merge = StateRegistration.mapMergeOf(registered.registrations.states.get(t.name))
        val decided = Decided(t, d.declared, CompatibilityCheck.verdict(t.recorded, d.declared,
          StateEncoding.of(target.avro)), merge)
        decided -> describe(target, decided)
      }
    }
  }

}
