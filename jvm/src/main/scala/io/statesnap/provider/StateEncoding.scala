package io.statesnap.provider

/**
 * How a store encodes its values, which decides whether a change that keeps the UnsafeRow layout rewrites entries:
 * an input of the one decision ([[StateDecision.decide]]), never decided beside it.
 */
private[statesnap] sealed abstract class StateEncoding(val name: String)

private[statesnap] object StateEncoding {
  /** Spark's UnsafeRow (the default): fields by position, so a rename or a relaxed nullability keeps the bytes. */
  case object UnsafeRow extends StateEncoding("unsaferow")
  /**
   * Avro (`spark.sql.streaming.stateStore.encodingFormat=avro`, transformWithState on Spark 4.0+): every entry names
   * its fields and their nullability, so any change of the value schema rewrites every entry.
   */
  case object Avro extends StateEncoding("avro")

  def of(avroEncoded: Boolean): StateEncoding = if (avroEncoded) Avro else UnsafeRow
}
