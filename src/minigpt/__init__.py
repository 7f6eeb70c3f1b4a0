"""minigpt：《Attention 机制与 Transformer Block》的配套代码包。"""
