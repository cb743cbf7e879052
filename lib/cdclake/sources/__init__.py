"""cdclake's own source plug-ins: one package each, registered by its ``plugin`` module
(:mod:`cdclake.spi.plugin`). A source imports :mod:`cdclake.spi`, never the engine."""
