package io.statesnap.checkpoint

/**
 * An offline tool refused what it was asked, before changing anything; the message says why and what to do. Every
 * tool's refusals are this one type, so that callers tell them from errors (Python's `Outcome.REFUSED`, exit code 4).
 * Not an IllegalArgumentException, which PySpark turns into its own exception type on the way to Python.
 */
final class ToolRefusal(message: String) extends RuntimeException(message)
