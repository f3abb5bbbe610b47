package org.apache.spark.sql.execution.streaming.state

/**
 * Spark's private members statesnap reads where Spark offers no other way (each use says why): a method without
 * parameters, declared by the object's class or one of its superclasses.
 */
private[state] object StatesnapPrivateMembers {
  def call[T](target: AnyRef, name: String): T = {
    val method = Iterator.iterate[Class[_]](target.getClass)(_.getSuperclass).takeWhile(_ != null)
      .flatMap(_.getDeclaredMethods).find(m => m.getName == name && m.getParameterCount == 0)
      .getOrElse(throw new NoSuchMethodException(s"${target.getClass.getName}.$name"))
    method.setAccessible(true)
    method.invoke(target).asInstanceOf[T]
  }
}
