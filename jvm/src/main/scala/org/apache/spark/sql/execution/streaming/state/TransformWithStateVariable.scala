package org.apache.spark.sql.execution.streaming.state

import io.statesnap.snapshot.StateKind
import org.apache.spark.sql.types.StructType

/**
 * A user state a planned transformWithState operator declares, with the key and value schemas its column family is
 * created with, as Spark's driver learns them in its `state` rule ([[StatesnapTransformWithStateVariables]]).
 */
final case class TransformWithStateVariable(name: String, kind: StateKind, keySchema: StructType,
    valueSchema: StructType)
