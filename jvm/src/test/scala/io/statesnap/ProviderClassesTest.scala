package io.statesnap

import io.statesnap.provider.StatesnapStateStoreProvider
import io.statesnap.query.StatesnapQueryListener
import org.junit.Assert.assertEquals
import org.junit.Test

/** The classes the lower layers name by string are the ones that exist, on every minor. */
class ProviderClassesTest {
  @Test def theProviderAndTheListenerAreNamedAsTheOtherLayersNameThem(): Unit = {
    assertEquals(ProviderClasses.Statesnap, classOf[StatesnapStateStoreProvider].getName)
    assertEquals(ProviderClasses.Listener, classOf[StatesnapQueryListener].getName)
  }
}
