package io.statesnap.testkit

import java.security.MessageDigest

import io.statesnap.provider.ProviderFixture
import io.statesnap.provider.StatesnapMetrics
import io.statesnap.registration.{Registrations, ScopeRegistrations, StateRegistration}
import org.apache.spark.sql.types.{DataType, StructType}
import org.apache.spark.unsafe.types.UTF8String
import org.json4s._
import org.json4s.jackson.JsonMethods

/**
 * One value state on a real RocksDB checkpoint, driven from Python (py4j) by the property tests: each
 * `restart` is a query run's first batch under a declared schema and registration, exactly as a
 * transformWithState operator drives statesnap's provider. Values are JSON ([[JsonRows]]), keyed by a string id.
 */
final class StateFixture {
  private val fixture = new ProviderFixture
  private val state = "state"
  private var version = 0L

  /**
   * Opens the latest version under `schemaJson` with what `registrationJson` registers for the state (a scope's
   * registrations as in the registrations conf, or null), reads every entry as the application would, writes
   * `putsJson` ({id: value}) and commits.
   * @return {"read": {id: value}, "migrated": n}; throws the provider's error when the state is refused
   */
  def restart(schemaJson: String, registrationJson: String, putsJson: String): String = {
    val schema = DataType.fromJson(schemaJson).asInstanceOf[StructType]
    val registration = Option(registrationJson).map(json => Registrations.parse(Some(s"""{"checkpoint:x": $json}""")).values.head)
    val provider = fixture.statesnap(fixture.registered(registration.getOrElse(ScopeRegistrations())))
    val store = provider.getStore(version, None)
    try {
      fixture.open(store, state, schema)
      val read = store.iterator(state).map { pair =>
        pair.key.getUTF8String(0).toString -> JsonRows.fromCatalyst(pair.value.copy(), schema)
      }.toList
      JsonMethods.parse(putsJson) match {
        case JObject(puts) => puts.foreach { case (id, value) =>
          store.put(fixture.key(id), fixture.row(schema, JsonRows.toCatalyst(value, schema).asInstanceOf[
            org.apache.spark.sql.catalyst.InternalRow].toSeq(schema): _*), state)
        }
        case other => throw new IllegalArgumentException(s"puts are an object of id -> value, not $other")
      }
      version = store.commit()
      val migrated = store.metrics.customMetrics(StatesnapMetrics.MigratedEntries)
      JsonMethods.compact(JsonMethods.render(JObject("read" -> JObject(read.sortBy(_._1)), "migrated" -> JInt(migrated))))
    } catch {
      case e: Throwable =>
        store.abort()
        throw e
    } finally provider.close()
  }

  /** The committed version: a refused restart leaves it as it was. */
  def committedVersion: Long = version

  /** A digest of the state's bytes and snapshot record at the committed version, read by Spark's own provider. */
  def digest(): String = {
    val provider = fixture.sparkRocksDb()
    val store = provider.getStore(version, None)
    try {
      val md = MessageDigest.getInstance("SHA-256")
      for (family <- Seq(state, "$statesnap_snapshots")) {
        store.createColFamilyIfAbsent(family, if (family == state) fixture.keySchema else
          io.statesnap.snapshot.RecordFamily.KeySchema, StructType.fromDDL("v BINARY"),
          org.apache.spark.sql.execution.streaming.state.NoPrefixKeyStateEncoderSpec(
            if (family == state) fixture.keySchema else io.statesnap.snapshot.RecordFamily.KeySchema),
          isInternal = family.startsWith("$"))
        store.iterator(family).map(p => (p.key.getBytes.toSeq, p.value.getBytes.toSeq)).toSeq.sortBy(_._1.mkString)
          .foreach { case (k, v) => md.update(k.toArray); md.update(v.toArray) }
      }
      md.digest().map("%02x".format(_)).mkString
    } finally { store.abort(); provider.close() }
  }
}
