package io.statesnap

import io.statesnap.StatesnapException._

/**
 * The errors no single area owns: a conf given a value it does not take, and statesnap's own bug (a state its code
 * rules out, as Spark's `SparkException.internalError`), each built here with its error class.
 */
object StatesnapErrors {
  def confTakes(conf: String, value: String, takes: String): StatesnapException =
    new StatesnapException(UnsupportedConfiguration, s"$conf=$value: it takes $takes")

  /**
   * A state statesnap's code rules out was reached (`what`): a bug of statesnap's, not of the query or the
   * checkpoint. The step that met it writes nothing more; its batch or verb does not commit.
   */
  def internal(what: String, cause: Throwable = null): StatesnapException =
    new StatesnapException(InternalError, s"$what. This is a bug in statesnap: report it with this stack trace.",
      cause)
}
