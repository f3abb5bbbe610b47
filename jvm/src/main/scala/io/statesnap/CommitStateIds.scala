package io.statesnap

import org.json4s._
import org.json4s.jackson.JsonMethods

/**
 * The state store checkpoint ids a commit log entry of checkpoint format v2 carries (Spark's `CommitMetadata`,
 * written as `v2` then one JSON line): by operator, by partition, one id per store name (the default store's
 * alone, for every operator but a join), naming the store version the batch committed (`<version>_<id>.zip` or
 * `.changelog`), which is how the next batch loads it.
 */
object CommitStateIds {
  type Ids = Map[Int, Seq[Seq[String]]]

  /** The ids in the text of a commit log entry; None for format v1, whose entries carry none. */
  def parse(text: String): Option[Ids] = text.linesIterator.toSeq match {
    case Seq("v2", json, _*) => JsonMethods.parse(json) \ "stateUniqueIds" match {
      case JObject(operators) => Some(operators.map {
        case (op, JArray(partitions)) => op.toInt -> partitions.map {
          case JArray(ids) => ids.map {
            case JString(id) => id
            case other => throw CheckpointFile.malformed(s"operator $op has the id ${JsonMethods.compact(other)}")
          }
          case other => throw CheckpointFile.malformed(s"operator $op has ${JsonMethods.compact(other)} for a " +
            "partition")
        }
        case (op, other) => throw CheckpointFile.malformed(s"operator $op has ${JsonMethods.compact(other)}")
      }.toMap)
      case JNothing | JNull => None
      case other => throw CheckpointFile.malformed(s"stateUniqueIds is ${JsonMethods.compact(other)}")
    }
    case _ => None
  }

  /** A format v2 commit log entry's text, as `text` says it but naming the store versions `ids` instead. */
  def withIds(text: String, ids: Ids): String = text.linesIterator.toSeq match {
    case Seq("v2", json, _*) =>
      val replaced = JsonMethods.parse(json) transformField {
        case ("stateUniqueIds", _) => "stateUniqueIds" -> JObject(ids.toList.sortBy(_._1).map { case (op, partitions) =>
          op.toString -> JArray(partitions.toList.map(stores => JArray(stores.toList.map(JString(_)))))
        })
      }
      s"v2\n${JsonMethods.compact(replaced)}"
    case _ => throw StatesnapErrors.internal("a commit log entry of checkpoint format v1 was given store versions")
  }
}
