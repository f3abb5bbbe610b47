package org.apache.spark.sql.execution.streaming.state

import scala.util.control.NonFatal

import org.slf4j.LoggerFactory

/**
 * Spark's RocksDB store checks the first value it reads against the value schema its provider was given
 * (`StateStoreProvider.validateStateRowFormat`, once per store). While a single state's values await statesnap's
 * migration they are in the recorded layout, not the declared one: a value to which a variable-length field is added
 * fails that check (a streaming aggregation gaining `max` of a string, its restore reading a group of the batch),
 * and one gaining fixed-length fields passes it only by chance. statesnap checks each such value against the
 * recorded layout itself before converting it (`PendingMigration`), so for that store Spark's check is marked done.
 */
object StatesnapRowFormatCheck {
  private val log = LoggerFactory.getLogger(getClass)

  /** Marks the check of Spark's read store `store` done (its private `isValidated`, 3.5 to 4.3). */
  def markDone(store: ReadStateStore): Unit =
    Iterator.iterate[Class[_]](store.getClass)(_.getSuperclass).takeWhile(_ != null)
      .flatMap(_.getDeclaredMethods).find(m => m.getName == "isValidated_$eq" && m.getParameterCount == 1) match {
      case Some(setter) =>
        try {
          setter.setAccessible(true)
          setter.invoke(store, java.lang.Boolean.TRUE)
        } catch {
          case NonFatal(e) => log.warn(s"statesnap could not mark Spark's row format check of $store done: $e")
        }
      // Spark's check then fails a batch that reads such a value: loudly, never a misread.
      case None => log.warn(s"statesnap found no row format check to mark done in ${store.getClass.getName}")
    }
}
