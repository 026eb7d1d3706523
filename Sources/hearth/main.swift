print("hearth: not built yet")
