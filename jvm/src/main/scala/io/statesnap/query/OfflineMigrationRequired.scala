package io.statesnap.query

import java.util.UUID
import java.util.concurrent.ConcurrentHashMap

import scala.util.Try
import scala.util.control.NonFatal

import scala.jdk.CollectionConverters._

import io.statesnap.StatesnapException
import io.statesnap.bridge.{ApplicationSqlSettings, CompatibilityCheck}
import io.statesnap.evolution.{ChangeKeyFix, FixFormat, FixRegistration}
import io.statesnap.evolution.FixFormat.shell
import io.statesnap.meaning.SameKey
import io.statesnap.provider.StateEncoding
import io.statesnap.registration.{ScopeRegistrations, SparkOperatorCheck, StateRegistration}
import io.statesnap.snapshot.{SnapshotDefinition, StateSnapshotRecord, TtlValueSnapshot}
import io.statesnap.checkpoint.{CheckpointReader, CheckpointRecords}
import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.types._

/**
 * A restart Spark's own check refuses where statesnap has an offline step that makes it: Spark's error advises to
 * turn the check off, which makes Spark read the old bytes under the new layout. This is statesnap's refusal instead,
 * naming the state or operator, its old and new schema, and the command that makes the change:
 *  - a transformWithState state's value schema on Spark 4.2+, which runs transformWithState on its own provider only:
 *    `python -m statesnap migrate`;
 *  - a stateful operator's key on a query statesnap does not serve (Spark's provider; statesnap's own refuses it
 *    itself): `python -m statesnap change-key`;
 *  - stateful operators added, removed or reordered, which Spark's operator metadata check refuses
 *    ([[SparkOperatorCheck]], whose refusal the rehearsal and `deploy` give before starting anything).
 * Spark names the schemas, not the state: the state is the one Spark's files at the latest committed batch record
 * with the old schema.
 */
object OfflineMigrationRequired {
  private val SparksRefusal =
    """(?s)\[STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE\].*?Existing value_schema=(.*?) and new value_schema=(.*?)\.\s*\n""".r
  private val SparksKeyRefusal =
    """(?s)\[STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE\].*?Existing key_schema=(.*?) and new key_schema=(.*?)\.\s*\n""".r
  /** Spark's refusal of a restart whose stateful operators differ from its operator metadata's ([[SparkOperatorCheck]]). */
  private val SparksOperatorRefusal = ("""(?s)\[""" + SparkOperatorCheck.SparksErrorClass +
    """\].*?in the metadata: \[(.*?)\].*?in current batch: \[(.*?)\]""").r
  private val SparksOperator = """\(OperatorId: (\d+) -> OperatorName: ([^)]*)\)""".r
  /** What the listener found for queries that terminated so, by query id, for `statesnap.refusals()` to raise. */
  private val refusals = new ConcurrentHashMap[UUID, String]

  /**
   * What the new version declares for a state that migrates offline, as `migrate` would be given it: what it
   * registers for the query (`registrations`, of the session that started it), the SQL settings its rules run with
   * (`sqlConf`, the session's) and how its store encodes values.
   */
  final case class Declared(registrations: ScopeRegistrations, sqlConf: Map[String, String], encoding: StateEncoding)

  /**
   * statesnap's refusal for the query with `id` on checkpoint `checkpoint`, if `failure` is Spark's refusal of one of
   * the changes above (`transformWithStateOffline`: the query's transformWithState state migrates offline, with what
   * the new version `declared`).
   */
  def of(id: UUID, checkpoint: String, failure: String, hadoopConf: Configuration,
      transformWithStateOffline: Option[Declared]): Option[String] = {
    val records = try CheckpointRecords.sparkRecords(checkpoint, hadoopConf) catch { case NonFatal(_) => Nil }
    val found = transformWithStateOffline.flatMap(declared => SparksRefusal.findFirstMatchIn(failure).map { m =>
      val (old, schema) = (m.group(1), m.group(2))
      val state = records.map(_._2).find { r =>
        val value = r.valueSnapshot.restoreSerializer().schema
        Seq(value, TtlValueSnapshot.wrap(value)).exists(_.toString == old)
      }
      refusal(checkpoint, state, old, schema, declared)
    }).orElse(SparksKeyRefusal.findFirstMatchIn(failure).map { m =>
      val (old, declared) = (m.group(1), m.group(2))
      keyRefusal(checkpoint, records.find(_._2.keySnapshot.restoreSerializer().schema.toString == old), old, declared)
    }).orElse(SparksOperatorRefusal.findFirstMatchIn(failure).map { m =>
      def operators(text: String) = SparksOperator.findAllMatchIn(text).map(o => o.group(1).toLong -> o.group(2)).toMap
      SparkOperatorCheck.refusal(checkpoint, operators(m.group(1)), operators(m.group(2)))
    })
    found.foreach { message =>
      if (refusals.size > 100) refusals.clear() // a session's failed queries: a handful
      refusals.put(id, message)
    }
    found
  }

  /** The refusal found for the query with id `id` (for Python: null if none). */
  def forQuery(id: String): String = Try(UUID.fromString(id)).toOption.flatMap(i => Option(refusals.get(i))).orNull

  /**
   * The refusal of `recorded`'s value schema changed from `old` to `schema` (Spark's texts of them). Its fix is the
   * `migrate` command, dry run first, carrying what the new version registers for the state; where `migrate` would
   * refuse the change as declared (a likely rename, a narrowing), the refusal says so, with the rules that fix it,
   * since the decision it asks is the one `migrate` makes.
   */
  private def refusal(checkpoint: String, recorded: Option[StateSnapshotRecord], old: String, schema: String,
      declared: Declared): String = {
    val value = parse(schema).map(s => TtlValueSnapshot.unwrap(s).getOrElse(s))
    val name = recorded.map(_.stateName)
    val definition = name.flatMap(n => StateRegistration.valueOf(declared.registrations.states.get(n)))
      .collect { case StateRegistration.Definition(json) => json }
    val verdict = for (r <- recorded; v <- value) yield Try(CompatibilityCheck.verdict(r, CompatibilityCheck.declare(r,
      None, None, None, v, definition, declared.registrations.compatibility.map(_.name),
      ApplicationSqlSettings(r, declared.sqlConf).settings), declared.encoding, checkpoint)).toOption
    val refused = verdict.flatten.filter(_.reported == CompatibilityCheck.Reported.Incompatible)
    val registered = for (n <- name; json <- definition) yield SnapshotDefinition.parse(n, json)
    val snapshot = if (refused.isDefined) Some("--snapshot '<the rules of the fix you choose above>'")
      else registered.map(d => FixFormat.CommandLine(Some(d.registration)).write(FixRegistration(Nil), Some(d.version)))
    val command = s"python -m statesnap migrate ${shell(checkpoint)} --state ${shell(name.getOrElse("<state>"))} " +
      s"--schema ${value.fold("'<new value schema, DDL>'")(s => shell(s.toDDL))}${snapshot.fold("")(" " + _)} " +
      "--no-file-sink"
    val asDeclared = refused.fold("")(v => " `migrate` would also refuse the change as the new version declares it:" +
      v.problems.asScala.map("\n  - " + _).mkString + "\nChoose a fix, and register its rules in the new version " +
      "too (statesnap.register_snapshot).")
    s"[${StatesnapException.OfflineMigrationRequired}] the value schema of transformWithState state " +
      s"${name.fold("")(s => s"'$s' ")}changed (recorded: ${parse(old).fold(old)(_.simpleString)}, declared: " +
      s"${value.fold(schema)(_.simpleString)}), and Spark ${org.apache.spark.SPARK_VERSION} runs " +
      "transformWithState only on its own state store provider (SPARK-54117), so statesnap cannot migrate it as " +
      s"the query restarts. Spark refused the restart; nothing was read or rewritten.$asDeclared Fix: with the " +
      "query stopped, check the migration (it writes nothing), run it, then restart the query:\n" +
      s"  $command --dry-run\n  $command\n(--file-sink <its output path> instead of --no-file-sink if the query " +
      "writes to a file sink; one --state and --schema more for each other state whose schema changed). Do not " +
      "set spark.sql.streaming.stateStore.stateSchemaCheck=false, as Spark's message suggests: Spark would then " +
      "read the old bytes under the new schema."
  }

  /** The refusal of a changed key of the operator `recorded` says (the one whose key Spark's files record as `old`). */
  private def keyRefusal(checkpoint: String, recorded: Option[(CheckpointReader.Store, StateSnapshotRecord)],
      old: String, declared: String): String = {
    val operator = recorded.fold("a stateful operator")(r => s"stateful operator ${r._1.operator}")
    val fix = (for (o <- parse(old); d <- parse(declared)) yield SameKey.changeKeyFix(o, d, None))
      .getOrElse(ChangeKeyFix())
      .copy(noFileSink = true)
    val change = s"the key of $operator changed (recorded: ${parse(old).fold(old)(_.simpleString)}, declared: " +
      s"${parse(declared).fold(declared)(_.simpleString)}), and Spark refused the restart; nothing was read or " +
      "rewritten."
    val keep = " Do not set spark.sql.streaming.stateStore.stateSchemaCheck=false, as Spark's message suggests: " +
      "Spark would then read the old keys under the new layout."
    s"[${StatesnapException.OfflineMigrationRequired}] $change Fix: with the query stopped, give every entry its " +
      s"new key, then restart the query:\n  ${FixFormat.CommandLine(checkpoint = Some(checkpoint)).changeKey(fix)}\n" +
      s"(${FixFormat.Application(None, Some(checkpoint)).changeKeyCall(fix)} from Python; --file-sink <its output path> " +
      "instead if the query writes to a file sink)." + keep
  }

  /**
   * The schema Spark's error prints (`StructType.toString`: `StructType(StructField(n,IntegerType,true),...)`), if it
   * reads back exactly: a field name with a comma or parenthesis, which the text cannot tell apart, gives None.
   */
  private[query] def parse(text: String): Option[StructType] =
    Try(new SchemaText(text).structType()).toOption.filter(_.toString == text)

  private final class SchemaText(text: String) {
    private var at = 0

    def structType(): StructType = {
      expect("StructType(")
      val fields = Seq.newBuilder[StructField]
      while (!text.startsWith(")", at)) {
        if (text.startsWith(",", at)) at += 1
        expect("StructField(")
        val name = upTo(',')
        expect(",")
        val dataType = any()
        expect(",")
        val nullable = upTo(')').toBoolean
        expect(")")
        fields += StructField(name, dataType, nullable)
      }
      expect(")")
      StructType(fields.result())
    }

    private def any(): DataType = {
      if (text.startsWith("StructType(", at)) return structType()
      val name = text.substring(at).takeWhile(_.isLetterOrDigit)
      at += name.length
      name match {
        case "ArrayType" => expect("("); val e = any(); expect(","); val n = upTo(')').toBoolean; expect(")")
          ArrayType(e, n)
        case "MapType" => expect("("); val k = any(); expect(","); val v = any(); expect(",")
          val n = upTo(')').toBoolean; expect(")"); MapType(k, v, n)
        case "DecimalType" => expect("("); val p = upTo(',').toInt; expect(","); val s = upTo(')').toInt; expect(")")
          DecimalType(p, s)
        case _ => DataType.fromDDL(name.stripSuffix("Type") match {
          case "Integer" => "int"
          case "TimestampNTZ" => "timestamp_ntz"
          case other => other
        })
      }
    }

    private def upTo(end: Char): String = {
      val value = text.substring(at).takeWhile(c => c != end && c != ',' && c != ')')
      at += value.length
      value
    }

    private def expect(token: String): Unit = {
      require(text.startsWith(token, at), s"'$token' expected at $at")
      at += token.length
    }
  }
}
