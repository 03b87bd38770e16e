"""The live channel: the WebSocket consumer, its commands, rendering and broadcasting."""
