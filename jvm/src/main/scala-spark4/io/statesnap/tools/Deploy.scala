package io.statesnap.tools

import io.statesnap.SparkClasses
import io.statesnap.bridge.CompatibilityCheck
import io.statesnap.registration.StateRegistration

import OfflineMigration.{describe, migrateStates, Decided}

/** The offline step of `statesnap.deploy` on Spark 4.2+ ([[Rehearsal]] decides whether it runs). */
object Deploy {
  /**
   * The offline step of a deploy (`statesnap.deploy`, Spark 4.2+): migrates the transformWithState states the
   * rehearsal `rehearsed` found migrating offline, each by the decision it made (the plan's schemas and the session's
   * registrations, as the driver's decision declares them: [[PlannedOperatorDecision]]), in one appended batch as
   * [[Migrate]] does. Nothing is written when no state migrates, or when a batch was committed since the rehearsal
   * (a refusal: the deploy is run again, deciding anew).
   */
  def run(spark: SparkClasses.SparkSession, rehearsed: Rehearsal.Rehearsed, fileSink: String,
      noFileSink: Boolean): ToolReport = {
    val steps = rehearsed.operators.flatMap(_.offline)
    val migrating = steps.flatMap(_.states)
    if (migrating.isEmpty) ToolReport(Seq("no transformWithState state needs an offline migration"),
      ToolReport.Nothing)
    else migrateStates(spark, rehearsed.checkpoint, migrating.map(_.current.stateName), fileSink, noFileSink,
      dryRun = false) { (checkpoint, target) =>
      steps.map(_.version - 1).filter(_ != target.batch).foreach(batch => checkpoint.refuse(
        MigrateRefusals.committedSinceRehearsal(batch, target.batch)))
      target.states.map { t =>
        val d = migrating.find(_.current.stateName == t.name).get
        val merge = StateRegistration.mapMergeOf(rehearsed.registered.registrations.states.get(t.name))
        val decided = Decided(t, d.current, CompatibilityCheck.verdictOf(t.recorded, d.current, d.decided,
          rehearsed.checkpoint), merge)
        decided -> describe(target, decided)
      }
    }
  }
}
