print("hearthd: not built yet")
