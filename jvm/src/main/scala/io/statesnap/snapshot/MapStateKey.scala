package io.statesnap.snapshot

import org.apache.spark.sql.types.StructType

/**
 * A map state's key as Spark declares its column family: `struct<key: struct, userKey: struct>`, the grouping key
 * (which places the entry) and then the user key. Read the same way by the decision on a changed user key and by
 * what statesnap writes into Spark's schema files.
 */
object MapStateKey {
  /** The grouping key (a struct of its one field `key`) and the user key of `key`, if `key` is a map's key. */
  def parts(key: StructType): Option[(StructType, StructType)] = key.fields match {
    case Array(grouping, user) if grouping.name == "key" && user.name == "userKey" =>
      (grouping.dataType, user.dataType) match {
        case (_: StructType, u: StructType) => Some((new StructType().add(grouping), u))
        case _ => None
      }
    case _ => None
  }
}
